/* Leader-epoch caches (lesson 10): each replica's (epoch, start offset) entries as a
 * table, straight from the engine's state. Rows that were not there in the previous
 * frame are marked "new"; a frame whose events truncated the cache says so. */
(function () {
  "use strict";
  const ALIAS = { 1: "A", 2: "B" };
  const seen = { runId: null, rows: {} };

  function td(text, tag) { const c = document.createElement(tag || "td"); c.textContent = text; return c; }

  KV.register("epoch-cache", {
    update: function (container, frame) {
      const st = frame.state || {};
      if (seen.runId !== st.run_id) { seen.rows = {}; seen.runId = st.run_id; }
      const lanes = st.lanes || [];
      container.replaceChildren();
      if (!lanes.length) {
        const p = document.createElement("p");
        p.className = "note";
        p.textContent = "No replicas yet.";
        container.append(p);
        return;
      }
      const nextRows = {};
      lanes.forEach(function (lane) {
        const table = document.createElement("table");
        table.className = "ec-table";
        table.id = "epoch-cache-" + lane.broker;
        const cap = document.createElement("caption");
        cap.textContent = "Broker " + lane.broker + (ALIAS[lane.broker] ? " (" + ALIAS[lane.broker] + ")" : "") +
          (lane.alive ? (lane.role === "leader" ? " — leader" : lane.role === "follower" ? " — follower" : " — no role yet") : " — down");
        table.append(cap);
        const head = document.createElement("tr");
        head.append(td("epoch", "th"), td("start offset", "th"), td("", "th"));
        head.children[0].scope = head.children[1].scope = "col";
        head.children[2].append(Object.assign(document.createElement("span"), { className: "visually-hidden", textContent: "change" }));
        const thead = document.createElement("thead");
        thead.append(head);
        table.append(thead);
        const body = document.createElement("tbody");
        if (!lane.alive) {
          const tr = document.createElement("tr");
          const c = td("down: the checkpoint file is read again when it restarts");
          c.colSpan = 3;
          tr.append(c);
          body.append(tr);
        } else {
          const before = seen.rows[lane.broker];
          const keys = [];
          (lane.epoch_cache || []).forEach(function (entry) {
            const key = entry[0] + ":" + entry[1];
            keys.push(key);
            const tr = document.createElement("tr");
            const fresh = before !== undefined && before.indexOf(key) < 0;
            if (fresh) tr.className = "ec-new";
            tr.append(td(String(entry[0])), td(String(entry[1])), td(fresh ? "new" : ""));
            body.append(tr);
          });
          if (!keys.length) {
            const tr = document.createElement("tr");
            const c = td("empty (nothing written yet)");
            c.colSpan = 3;
            tr.append(c);
            body.append(tr);
          }
          const gone = (before || []).filter(function (k) { return keys.indexOf(k) < 0; });
          gone.forEach(function (k) {
            const parts = k.split(":");
            const tr = document.createElement("tr");
            tr.className = "ec-gone";
            tr.append(td(parts[0]), td(parts[1]), td("removed"));
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
