/* The Lab's heatmaps: each <div data-figure="ID"> is drawn from the plotly figure JSON in
 * <script type="application/json" id="ID"> (built by kafkaviz/lab/figures.py). Clicking a
 * cell opens that cell's worst run (its URL is the cell's customdata). The table under each
 * map carries the same numbers and links for keyboards and screen readers. Redrawn after
 * htmx swaps in a new view. */
(function () {
  "use strict";

  function draw(root) {
    if (!window.Plotly) { return; }
    root.querySelectorAll("[data-figure]").forEach(function (el) {
      const data = document.getElementById(el.dataset.figure);
      if (!data || el.dataset.drawn) { return; }
      const fig = JSON.parse(data.textContent);
      el.dataset.drawn = "1";
      const config = { responsive: true, displaylogo: false, staticPlot: false,
                       modeBarButtonsToRemove: ["select2d", "lasso2d"] };
      window.Plotly.newPlot(el, fig.data, fig.layout, config).then(function () {
        el.on("plotly_click", function (ev) {
          const pt = ev.points && ev.points[0];
          const url = pt && pt.customdata;
          if (url) { window.location.assign(url); }
        });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:afterSwap", function (ev) { draw(ev.target); });
})();
