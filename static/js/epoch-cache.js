/* Leader-epoch caches: each replica's (epoch, start offset) entries as a two-column
 * table, straight from the engine's state. An entry added in this step carries a
 * "new" badge in its epoch cell, one a truncation removed stays struck through with
 * "removed" until the next step (text, not only colour). */
(function () {
  "use strict";
  const seen = { runId: null, rows: {} };

  function cell(text, tag, badge) {
    const c = KV.html(tag || "td", {}, text);
    if (badge) c.append(" ", KV.html("span", { class: "ec-badge" }, badge));
    return c;
  }

  KV.register("epoch-cache", {
    update: function (container, frame) {
      const st = frame.state || {};
      if (seen.runId !== st.run_id) { seen.rows = {}; seen.runId = st.run_id; }
      const lanes = st.lanes || [];
      container.replaceChildren();
      if (!lanes.length) {
        container.append(KV.html("p", { class: "note" }, KV.t("no_topic")));
        return;
      }
      const nextRows = {};
      lanes.forEach(function (lane) {
        const table = KV.html("table", { class: "ec-table", id: "epoch-cache-" + lane.broker });
        const role = lane.alive ? (lane.role === "leader" ? KV.t("leader") : lane.role === "follower" ? KV.t("follower") : KV.t("no_role")) : lane.pending ? KV.t("up") : KV.t("down");
        table.append(KV.html("caption", {}, KV.brokerName(lane.broker) + " — " + role));
        const head = KV.html("tr");
        const th1 = cell(KV.t("epoch"), "th"), th2 = cell(KV.t("start_offset"), "th");
        th1.scope = th2.scope = "col";
        head.append(th1, th2);
        const thead = KV.html("thead");
        thead.append(head);
        table.append(thead);
        const body = KV.html("tbody");
        function wide(text) { const tr = KV.html("tr"); const c = cell(text); c.colSpan = 2; tr.append(c); body.append(tr); }
        if (lane.pending) {
          wide(KV.t("le_lane_pending"));
        } else if (!lane.alive) {
          wide(KV.t("down_cache"));
        } else {
          const before = seen.rows[lane.broker];
          const keys = [];
          (lane.epoch_cache || []).forEach(function (entry) {
            const key = entry[0] + ":" + entry[1];
            keys.push(key);
            const fresh = before !== undefined && before.indexOf(key) < 0;
            const tr = KV.html("tr", { class: fresh ? "ec-new" : "" });
            tr.append(cell(String(entry[0]), "td", fresh ? KV.t("new") : ""), cell(String(entry[1])));
            body.append(tr);
          });
          if (!keys.length) wide(KV.t("empty_cache"));
          (before || []).filter(function (k) { return keys.indexOf(k) < 0; }).forEach(function (k) {
            const parts = k.split(":");
            const tr = KV.html("tr", { class: "ec-gone" });
            tr.append(cell(parts[0], "td", KV.t("removed")), cell(parts[1]));
            body.append(tr);
          });
          nextRows[lane.broker] = keys;
        }
        table.append(body);
        container.append(table);
      });
      // Down brokers keep what we last saw, so their rows do not look "new" on restart.
      Object.keys(seen.rows).forEach(function (b) { if (!(b in nextRows)) nextRows[b] = seen.rows[b]; });
      seen.rows = nextRows;
    },
  });
})();
