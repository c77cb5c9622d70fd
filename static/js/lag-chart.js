/* Chart (plotly, lesson 13): per partition, the high watermark, the group's committed offset
 * and the lag (HW − committed) over virtual time, from frame.state.lag_series (the engine's
 * high_watermark_changed and offset_committed events); lines differ by dash AND marker, and the
 * legend names them. Below it, the deliveries strip: how many times the group was handed each
 * offset (frame.state.deliveries), so duplicates (×2) and skipped offsets (never) are seen. */
(function () {
  "use strict";
  const h = KV.html;
  const LINES = [
    { i: 1, key: "lc_hw", dash: "solid", symbol: "circle", color: "#0072b2" },
    { i: 2, key: "lc_committed", dash: "dash", symbol: "square", color: "#009e73" },
    { i: 3, key: "lc_lag", dash: "dot", symbol: "diamond", color: "#d55e00" },
  ];

  function strip(st) {
    const wrap = h("div", { class: "lc-deliveries", id: "lc-deliveries" });
    const g = st.group;
    const hwOf = {};
    ((g && g.partitions) || []).forEach(function (p) { hwOf[p.partition] = p.high_watermark || 0; });
    (st.deliveries || []).forEach(function (d) {
      const counts = {};
      d.counts.forEach(function (c) { counts[c[0]] = c[1]; });
      const row = h("div", { class: "lc-row", id: "lc-row-" + d.partition });
      row.appendChild(h("span", { class: "lc-row-name" }, KV.t("lc_handed", { p: (g ? g.topic : "") + "-" + d.partition })));
      const end = Math.max(hwOf[d.partition] || 0, ...d.counts.map(function (c) { return c[0] + 1; }));
      for (let o = 0; o < end && o < 200; o++) {
        const n = counts[o] || 0;
        const label = n === 0 ? KV.t("lc_never") : "×" + n;
        row.appendChild(h("span", { class: "lc-cell lc-n" + Math.min(n, 2), id: "lc-" + d.partition + "-" + o,
          "data-count": n, title: KV.t("offset") + " " + o + ": " + label }, o + " " + label));
      }
      wrap.appendChild(row);
    });
    if (!wrap.childNodes.length) wrap.appendChild(h("p", { class: "note" }, KV.t("lc_nothing")));
    return wrap;
  }

  KV.register("lag-chart", {
    update: function draw(root, frame) {
      const st = frame.state || {};
      if (!st.lag_series) return;
      let plot = root.querySelector(".lc-plot");
      if (!plot) {
        plot = h("div", { class: "lc-plot", id: "lc-plot", role: "img", "aria-label": KV.t("lc_aria") });
        root.appendChild(plot);
        root.appendChild(h("p", { class: "rc-caption", id: "lc-caption" }));
        root.appendChild(h("div", { id: "lc-strip" }));
      }
      const now = (st.group && st.group.partitions || []).map(function (p) {
        return KV.t("lc_now_part", { p: st.group.topic + "-" + p.partition, hw: p.high_watermark,
          committed: p.committed === null ? KV.t("cg_none") : p.committed, lag: p.lag === null ? "–" : p.lag });
      });
      root.querySelector("#lc-caption").textContent = now.length ? KV.t("rpc_now", { list: now.join("; ") }) : "";
      const holder = root.querySelector("#lc-strip");
      const fresh = strip(st);
      if (holder.firstElementChild) KV.morph(holder.firstElementChild, fresh); else holder.appendChild(fresh);
      if (!KV.withPlotly(root, frame, draw)) return;
      const traces = [];
      st.lag_series.forEach(function (s) {
        LINES.forEach(function (l) {
          traces.push({ x: s.points.map(function (p) { return p[0] / 1000; }),
            y: s.points.map(function (p) { return p[l.i] === null ? null : p[l.i]; }),
            name: KV.t(l.key) + (st.lag_series.length > 1 ? " p" + s.partition : ""), mode: "lines+markers",
            line: { shape: "hv", dash: l.dash, color: l.color, width: 2 }, marker: { symbol: l.symbol, size: 6, color: l.color } });
        });
      });
      const layout = { margin: { l: 44, r: 10, t: 8, b: 96 }, height: 300,
        xaxis: { title: { text: KV.t("rpc_time") } }, yaxis: { title: { text: KV.t("offset") }, rangemode: "tozero" },
        legend: { orientation: "h", y: -0.42 } };
      window.Plotly.react(plot, traces, layout, { displayModeBar: false, responsive: true });
    },
  });
})();
