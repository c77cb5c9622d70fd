/* The cluster (lesson 10): brokers up or down, the active controller, who holds and
 * leads partition t-0, and the links between brokers (cut links dashed and labelled).
 * Also keeps the per-broker Crash / Restart buttons honest: the one that would be
 * refused is marked aria-disabled (it stays focusable; the server explains why). */
(function () {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  const ALIAS = { 1: "A", 2: "B" };
  const W = 560, H = 225, BOX_W = 150, BOX_H = 96;

  function el(name, attrs, text) {
    const n = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, attrs[k]); });
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function positions(n) {
    const out = {};
    for (let i = 0; i < n; i++) out[i] = { x: 20 + i * ((W - 40 - BOX_W) / Math.max(n - 1, 1)), y: 70 };
    return out;
  }

  function linkState(links, a, b) {
    // network.faults(): a list of {src|a, dst|b, ...}; treat any fault touching the pair as on the link.
    let state = null;
    (links || []).forEach(function (f) {
      const s = f.src !== undefined ? f.src : f.a, d = f.dst !== undefined ? f.dst : f.b;
      if ((s === a && d === b) || (s === b && d === a)) {
        state = f.cut ? "cut" : (f.delay_ms ? "slow +" + f.delay_ms + " ms" : "lossy p=" + f.drop_probability);
      }
    });
    return state;
  }

  function setDisabled(btn, off, why) {
    if (!btn) return;
    if (off) { btn.setAttribute("aria-disabled", "true"); btn.title = why; }
    else { btn.removeAttribute("aria-disabled"); btn.removeAttribute("title"); }
  }

  // Refusals of Crash / Restart land in #general-error (live.js), far up the page; show
  // the same words beside the broker buttons too.
  document.addEventListener("DOMContentLoaded", function () {
    const src = document.getElementById("general-error"), dst = document.getElementById("broker-error");
    if (!src || !dst || !window.MutationObserver) return;
    new MutationObserver(function () { dst.textContent = src.textContent; })
      .observe(src, { childList: true, characterData: true, subtree: true });
  });

  KV.register("cluster", {
    update: function (container, frame) {
      const st = frame.state || {};
      const brokers = st.brokers || [];
      const pos = positions(brokers.length);
      const svg = el("svg", { viewBox: "0 0 " + W + " " + H, class: "cl-svg", role: "img", "aria-labelledby": "cl-title cl-desc" });
      svg.append(el("title", { id: "cl-title" }, "The cluster's brokers"));
      const desc = [];
      // Links first, under the boxes.
      for (let a = 0; a < brokers.length; a++) {
        for (let b = a + 1; b < brokers.length; b++) {
          const pa = pos[a], pb = pos[b];
          const fault = linkState(st.links, a, b);
          const down = !brokers[a].alive || !brokers[b].alive;
          const bend = (b - a > 1) ? 36 : 0;   // non-neighbours: a curve under the boxes
          const x1 = pa.x + BOX_W / 2, x2 = pb.x + BOX_W / 2, y = pa.y + (bend ? BOX_H : BOX_H / 2);
          const d = bend ? "M" + x1 + "," + y + " Q" + (x1 + x2) / 2 + "," + (y + bend * 2) + " " + x2 + "," + y
            : "M" + (pa.x + BOX_W) + "," + y + " L" + pb.x + "," + y;
          svg.append(el("path", { d: d, class: "cl-link" + (fault ? " cl-link-cut" : "") + (down ? " cl-link-idle" : "") }));
          if (fault) {
            svg.append(el("text", { x: (x1 + x2) / 2, y: bend ? y + bend + 14 : y - 6, class: "cl-link-label", "text-anchor": "middle" }, "✂ " + fault));
            desc.push("link " + a + "–" + b + ": " + fault);
          }
        }
      }
      brokers.forEach(function (b) {
        const p = pos[b.id];
        const g = el("g", { class: "cl-broker" + (b.alive ? " up" : " down"), id: "cl-broker-" + b.id, transform: "translate(" + p.x + "," + p.y + ")" });
        g.append(el("rect", { width: BOX_W, height: BOX_H, rx: 10, class: "cl-box" }));
        if (!b.alive) {
          g.append(el("path", { d: "M0,0 L" + BOX_W + "," + BOX_H + " M" + BOX_W + ",0 L0," + BOX_H, class: "cl-cross" }));
        }
        g.append(el("text", { x: 10, y: 22, class: "cl-name" }, "Broker " + b.id + (ALIAS[b.id] ? " (" + ALIAS[b.id] + ")" : "")));
        g.append(el("text", { x: 10, y: 42, class: "cl-status" }, b.alive ? "● up" + (b.fenced ? " · fenced" : "") : "✗ DOWN" + (b.fenced ? " · fenced" : "")));
        let role = b.replica ? (b.leader ? "♛ leads t-0" : "holds t-0") : "no replica of t-0";
        g.append(el("text", { x: 10, y: 62, class: "cl-role" }, role));
        g.append(el("text", { x: 10, y: 82, class: "cl-inc" }, "process #" + b.incarnation));
        if (b.controller) {
          const c = el("g", { class: "cl-controller", transform: "translate(" + (BOX_W / 2 - 52) + ",-30)" });
          c.append(el("rect", { width: 104, height: 22, rx: 11 }));
          c.append(el("text", { x: 52, y: 15.5, "text-anchor": "middle" }, "★ controller"));
          g.append(c);
        }
        svg.append(g);
        desc.push("Broker " + b.id + ": " + (b.alive ? "up" : "down") + (b.fenced ? ", fenced" : "") +
          (b.controller ? ", active controller (epoch " + ((st.controller || {}).epoch) + ")" : "") + ", " + role.replace("♛ ", ""));
        setDisabled(document.getElementById("crash-" + b.id), !b.alive, "Broker " + b.id + " is already down");
        setDisabled(document.getElementById("restart-" + b.id), b.alive, "Broker " + b.id + " is running");
      });
      svg.append(el("desc", { id: "cl-desc" }, desc.join(". ")));
      container.replaceChildren(svg);
      const p = document.createElement("p");
      p.className = "cl-text";
      p.id = "cluster-text";
      p.textContent = desc.join(" · ");
      container.append(p);
    },
  });
})();
