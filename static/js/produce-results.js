/* Produce requests (lessons 9 and 11): one row per request with its values, its acks, what the
 * producer was told, and — for an acknowledged record the checker finds missing now — LOST.
 * From frame.state.produce (the engine's produce results and pending requests). Status is a
 * word and a symbol, never colour alone. */
(function () {
  "use strict";
  const STATUS = { acked: "pr_acked", error: "pr_error", waiting: "pr_waiting", sent: "pr_sent" };
  const h = KV.html;
  KV.register("produce-results", {
    update: function (root, frame) {
      const st = frame.state || {};
      if (!st.produce) return;
      let table = root.querySelector("table");
      if (!table) {
        table = h("table", { class: "pr-table", id: "pr-table" });
        const tr = h("tr");
        [KV.t("pr_col_request"), KV.t("pr_col_value"), "acks", KV.t("pr_col_told"), KV.t("pr_col_now")].forEach(function (t) { tr.appendChild(h("th", { scope: "col" }, t)); });
        table.appendChild(h("thead")).appendChild(tr);
        table.appendChild(h("tbody"));
        root.appendChild(table);
      }
      const body = table.tBodies[0];
      body.textContent = "";
      if (!st.produce.length) {
        const tr = h("tr"); tr.appendChild(h("td", { colspan: "5" }, KV.t("pr_none"))); body.appendChild(tr); return;
      }
      st.produce.forEach(function (r) {
        const tr = h("tr", { id: "pr-" + r.request_id, class: "pr-" + r.status + (r.lost ? " pr-lost" : "") });
        tr.appendChild(h("td", {}, "#" + r.request_id));
        tr.appendChild(h("td", {}, r.values.join(", ")));
        tr.appendChild(h("td", {}, r.acks));      // the engine's name of the value ("all", "1", "0")
        tr.appendChild(h("td", {}, r.base_offset !== null && r.status === "acked"
          ? KV.t("pr_acked_at", { offset: r.base_offset })
          : (STATUS[r.status] ? KV.t(STATUS[r.status]) : r.status) + (r.error ? " " + r.error : "")));
        tr.appendChild(h("td", { class: "pr-now" }, r.lost ? KV.t("pr_lost") : ""));
        body.appendChild(tr);
      });
    },
  });
})();
