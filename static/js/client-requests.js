/* The client's requests of the current step (kafkaviz/live/client_session.py): a row per
 * request -- connection, broker, API and version, correlation id, the answer's error code
 * (or none: the answer was lost) -- and the connections open now. */
(function () {
  "use strict";
  KV.register("client-requests", {
    update: function (container, frame) {
      const st = frame.state || {};
      const rows = st.requests || [];
      container.replaceChildren();
      const conns = st.connections || [];
      container.append(KV.html("p", { class: "note", id: "client-connections" },
        KV.t("cr_connections", { n: conns.length }) + (conns.length ? " " + conns.map(function (c) {
          return c.node + " → " + KV.brokerName(c.broker);
        }).join(", ") : "")));
      if (!rows.length) {
        container.append(KV.html("p", { class: "note" }, KV.t("cr_none")));
        return;
      }
      const table = KV.html("table", { class: "cr-table" });
      const head = KV.html("tr");
      ["cr_conn", "cr_broker", "cr_request", "cr_corr", "cr_answer"].forEach(function (k) {
        const th = KV.html("th", {}, KV.t(k));
        th.scope = "col";
        head.append(th);
      });
      const thead = KV.html("thead");
      thead.append(head);
      table.append(thead);
      const body = KV.html("tbody");
      rows.forEach(function (r) {
        const tr = KV.html("tr", { class: r.error === null ? "cr-lost" : r.error !== "NONE" ? "cr-error" : "" });
        tr.append(KV.html("td", {}, String(r.node)), KV.html("td", {}, KV.brokerName(r.broker)),
          KV.html("td", {}, r.api + " v" + r.version), KV.html("td", {}, String(r.correlation_id)),
          KV.html("td", {}, r.error === null ? KV.t("cr_no_answer") : r.error === "NONE" ? "ok" : r.error));
        body.append(tr);
      });
      table.append(body);
      const wrap = KV.html("div", { class: "cr-scroll", tabindex: "0", role: "region", "aria-labelledby": "client-requests-title" });
      wrap.append(table);
      container.append(wrap);
    },
  });
})();
