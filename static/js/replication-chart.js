/* Chart (plotly, lesson 8): LEO and HW of every replica over virtual time, from the engine's
 * leo_changed / high_watermark_changed events (frame.state.series). LEO lines are solid, HW
 * lines dashed; each replica has its own colour AND marker symbol, and the legend names them. */
(function () {
  "use strict";
  const COLOURS = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#d55e00", "#56b4e9", "#555d66"];
  const SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "cross", "star"];
  KV.register("replication-chart", {
    update: function draw(root, frame) {
      const st = frame.state || {};
      if (!st.series) return;
      let plot = root.querySelector(".rpc-plot");
      if (!plot) {
        plot = document.createElement("div");
        plot.className = "rpc-plot";
        plot.id = "rpc-plot";
        plot.setAttribute("role", "img");
        plot.setAttribute("aria-label", KV.t("rpc_aria"));
        root.appendChild(plot);
        const cap = document.createElement("p");
        cap.className = "rc-caption";
        cap.id = "rpc-caption";
        root.appendChild(cap);
      }
      const words = (st.lanes || []).filter(function (l) { return l.alive; }).map(function (l) {
        return KV.t("hw_broker", { b: l.broker }) + ": LEO " + l.leo + ", HW " + l.high_watermark;
      });
      root.querySelector("#rpc-caption").textContent = words.length ? KV.t("rpc_now", { list: words.join("; ") }) : "";
      if (!KV.withPlotly(root, frame, draw)) return;
      const traces = st.series.map(function (s) {
        const c = COLOURS[s.broker % COLOURS.length];
        return { x: s.points.map(function (p) { return p[0] / 1000; }), y: s.points.map(function (p) { return p[1]; }),
          name: KV.t("hw_broker", { b: s.broker }) + " " + (s.what === "leo" ? "LEO" : "HW"), mode: "lines+markers",
          line: { shape: "hv", color: c, width: s.what === "leo" ? 2.5 : 2, dash: s.what === "leo" ? "solid" : "dash" },
          marker: { symbol: SYMBOLS[s.broker % SYMBOLS.length], size: 6, color: c } };
      });
      const layout = { margin: { l: 44, r: 10, t: 8, b: 96 }, height: 320,
        xaxis: { title: { text: KV.t("rpc_time") } }, yaxis: { title: { text: KV.t("offset") }, rangemode: "tozero", dtick: 1 },
        legend: { orientation: "h", y: -0.42 } };
      window.Plotly.react(plot, traces, layout, { displayModeBar: false, responsive: true });
    },
  });
})();
