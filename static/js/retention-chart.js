/* Chart (plotly, lesson 5): the partition's size over virtual time against retention.bytes.
 * Two lines from frame.state.history ([time_ms, segment bytes, bytes on disk]): what the log
 * holds, and what its directory holds including .deleted files still waiting for
 * file.delete.delay.ms; retention.bytes as a dashed line. Lines differ by dash and marker, not
 * colour alone; a caption below states the latest figures in words. */
(function () {
  "use strict";
  function caption(st) {
    const last = st.history[st.history.length - 1] || [0, 0, 0];
    return KV.t("rc_caption", { s: (last[0] / 1000).toFixed(1), segments: last[1].toLocaleString("en-US"),
      disk: last[2].toLocaleString("en-US"),
      limit: st.retention_bytes < 0 ? KV.t("rc_no_limit") : KV.t("rc_limit", { n: st.retention_bytes }) });
  }
  KV.register("retention-chart", {
    update: function draw(root, frame) {
      const st = frame.state || {};
      if (!st.history) return;
      let plot = root.querySelector(".rc-plot");
      if (!plot) {
        plot = document.createElement("div");
        plot.className = "rc-plot";
        plot.id = "rc-plot";
        plot.setAttribute("role", "img");
        plot.setAttribute("aria-label", KV.t("rc_aria"));
        const cap = document.createElement("p");
        cap.className = "rc-caption";
        cap.id = "rc-caption";
        root.appendChild(plot);
        root.appendChild(cap);
      }
      root.querySelector(".rc-caption").textContent = caption(st);
      if (!KV.withPlotly(root, frame, draw)) return;
      const xs = st.history.map(function (p) { return p[0] / 1000; });
      const traces = [
        { x: xs, y: st.history.map(function (p) { return p[1]; }), name: KV.t("rc_segments"), mode: "lines+markers",
          line: { shape: "hv", color: "#0072b2", width: 2 }, marker: { symbol: "circle", size: 4 } },
        { x: xs, y: st.history.map(function (p) { return p[2]; }), name: KV.t("rc_on_disk"), mode: "lines",
          line: { shape: "hv", color: "#d55e00", width: 2, dash: "dot" } },
      ];
      const shapes = st.retention_bytes >= 0 ? [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: st.retention_bytes,
        y1: st.retention_bytes, line: { color: "#555d66", width: 2, dash: "dash" } }] : [];
      const annotations = st.retention_bytes >= 0 ? [{ xref: "paper", x: 0, y: st.retention_bytes, xanchor: "left",
        yanchor: "bottom", text: "retention.bytes = " + st.retention_bytes, showarrow: false, font: { size: 11 } }] : [];
      const layout = { margin: { l: 56, r: 12, t: 8, b: 84 }, height: 300, shapes: shapes, annotations: annotations,
        xaxis: { title: { text: KV.t("rpc_time") }, zeroline: false }, yaxis: { title: { text: KV.t("rc_bytes") }, rangemode: "tozero" },
        legend: { orientation: "h", y: -0.38 }, transition: KV.reducedMotion() ? undefined : { duration: 200 } };
      window.Plotly.react(plot, traces, layout, { displayModeBar: false, responsive: true, staticPlot: false });
    },
  });
})();
