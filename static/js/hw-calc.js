/* The leader's high-watermark arithmetic (lesson 8): its own LEO, the remote LEO it holds for
 * each follower (what that follower's last fetch offset said), which of them are in the ISR,
 * and HW = the smallest of those. From frame.state.hw_view, read from the engine's partition. */
(function () {
  "use strict";
  const h = KV.html;
  KV.register("hw-calc", {
    update: function (root, frame) {
      const st = frame.state || {};
      if (!("hw_view" in st)) return;
      const v = st.hw_view;
      root.textContent = "";
      if (!v) { root.appendChild(h("p", { class: "note" }, KV.t("hw_no_leader"))); return; }
      const isr = new Set(v.isr.map(String));
      const table = h("table", { class: "hw-table", id: "hw-table" });
      const head = h("tr");
      ["", KV.t("hw_broker_leader", { b: v.leader })].concat(Object.keys(v.remote_leos).map(function (b) { return KV.t("hw_broker", { b: b }); }))
        .forEach(function (t, i) { head.appendChild(h(i ? "th" : "td", i ? { scope: "col" } : {}, t)); });
      table.appendChild(h("thead")).appendChild(head);
      const body = table.appendChild(h("tbody"));
      const row = h("tr");
      row.appendChild(h("th", { scope: "row" }, KV.t("hw_row")));
      row.appendChild(h("td", { class: "hw-own", id: "hw-leo-" + v.leader }, KV.t("hw_own", { leo: v.leo })));
      Object.keys(v.remote_leos).forEach(function (b) {
        const leo = v.remote_leos[b];
        const cell = h("td", { id: "hw-remote-" + b, class: isr.has(b) ? "in-isr" : "out-isr" },
          KV.t("hw_remote", { leo: leo < 0 ? "?" : leo }) + (isr.has(b) ? "" : " — " + KV.t("not_in_isr")));
        if (isr.has(b) && leo === v.min_isr_leo) cell.classList.add("is-min");
        row.appendChild(cell);
      });
      body.appendChild(row);
      root.appendChild(table);
      const terms = [String(v.leo)].concat(Object.keys(v.remote_leos).filter(function (b) { return isr.has(b) && v.remote_leos[b] >= 0; })
        .map(function (b) { return String(v.remote_leos[b]); }));
      root.appendChild(h("p", { class: "hw-formula", id: "hw-formula" },
        "HW = min(ISR {" + v.isr.join(", ") + "}) = min(" + terms.join(", ") + ") = " + v.min_isr_leo + " · " +
        KV.t(v.high_watermark !== v.min_isr_leo ? "hw_is_moving" : "hw_is", { hw: v.high_watermark })));
    },
  });
})();
