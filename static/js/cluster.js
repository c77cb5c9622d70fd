/* The cluster: brokers up or down, the active controller, who holds and leads the
 * lesson's partition, and the network links (cut links dashed with ✂, one-way cuts with
 * an arrow head). Elements are kept by id and updated in place, so a broker going down
 * changes its box rather than redrawing the picture. Clicking a broker picks it for the
 * fault buttons (digits do the same); the buttons that the engine would refuse are
 * marked aria-disabled (they stay focusable; the engine's refusal explains why). */
(function () {
  "use strict";
  const BOX_H = 96;
  let BOX_W = 150;
  let W = 560;
  const el = KV.el;
  const $ = function (id) { return document.getElementById(id); };

  // Boxes per row follow the space the diagram has, so text stays near its real size on a phone.
  function positions(n) {
    const out = {};
    const perRow = Math.max(1, Math.min(n, 3, Math.floor((W - 20) / (BOX_W + 10))));
    for (let i = 0; i < n; i++) {
      const row = Math.floor(i / perRow), col = i % perRow;
      out[i] = { x: 20 + col * ((W - 40 - BOX_W) / Math.max(perRow - 1, 1)), y: 50 + row * (BOX_H + 80) };
    }
    return out;
  }

  // network.faults(): one entry per faulty direction {src, dst, cut, delay_ms, drop_probability}.
  function faultsBetween(links, a, b) {
    const out = { ab: null, ba: null };
    (links || []).forEach(function (f) {
      const s = f.src !== undefined ? f.src : f.a, d = f.dst !== undefined ? f.dst : f.b;
      const what = f.cut ? "cut" : f.delay_ms ? KV.t("link_slow", { ms: f.delay_ms }) : KV.t("link_lossy", { p: f.drop_probability });
      if (s === a && d === b) out.ab = what;
      if (s === b && d === a) out.ba = what;
    });
    return out;
  }

  function pick(b) {
    const sel = $("broker-pick");
    if (!sel) return;
    sel.value = String(b);
    sel.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function refreshButtons(st) {
    const sel = $("broker-pick");
    const b = (st.brokers || [])[sel ? Number(sel.value) : -1];
    document.querySelectorAll(".cl-broker").forEach(function (g) {
      g.classList.toggle("picked", !!sel && g.dataset.broker === sel.value);
    });
    if (!b) return;
    const down = KV.t("down"), up = KV.t("up");
    const name = KV.t("broker_n", { b: b.id });
    KV.setDisabled($("crash-button"), !b.alive, KV.t("cl_button_why", { broker: name, state: down }));
    KV.setDisabled($("shutdown-button"), !b.alive, KV.t("cl_button_why", { broker: name, state: down }));
    KV.setDisabled($("restart-button"), b.alive, KV.t("cl_button_why", { broker: name, state: up }));
  }

  function draw(container, st) {
    const brokers = st.brokers || [];
    const pos = positions(brokers.length);
    W = Math.max(340, Math.min(560, container.clientWidth || 560));
    BOX_W = W < 420 ? 140 : 150;
    const perRow = Math.max(1, Math.min(brokers.length, 3, Math.floor((W - 20) / (BOX_W + 10))));
    const rows = Math.ceil(brokers.length / perRow);
    const svg = KV.keep(container, "cl-svg", function () {
      const s = el("svg", { class: "cl-svg", role: "img", "aria-labelledby": "cl-title cl-desc" });
      s.append(el("title", { id: "cl-title" }, ""), el("desc", { id: "cl-desc" }, ""));
      const defs = el("defs");
      const m = el("marker", { id: "cl-head", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" });
      m.append(el("path", { d: "M0,0 L10,5 L0,10 z", class: "cl-head" }));
      defs.append(m);
      s.append(defs, el("g", { id: "cl-links" }), el("g", { id: "cl-boxes" }));
      return s;
    });
    svg.setAttribute("viewBox", "0 0 " + W + " " + (50 + rows * BOX_H + (rows - 1) * 80 + (perRow === 3 ? 90 : 30)));
    // A broker whose every link is cut both ways is "isolated": said once, on its box, rather
    // than on each of its links.
    const isolated = {};
    brokers.forEach(function (x) {
      isolated[x.id] = brokers.length > 1 && brokers.every(function (y) {
        if (y.id === x.id) return true;
        const f = faultsBetween(st.links, x.id, y.id);
        return f.ab === "cut" && f.ba === "cut";
      });
    });
    $("cl-title").textContent = KV.t("broker_n", { b: "0–" + (brokers.length - 1) });
    const desc = [];
    const linksG = $("cl-links"), boxesG = $("cl-boxes");
    const seen = new Set();
    for (let a = 0; a < brokers.length; a++) {
      for (let b = a + 1; b < brokers.length; b++) {
        const pa = pos[a], pb = pos[b];
        const f = faultsBetween(st.links, a, b);
        const fault = f.ab || f.ba;
        const idle = !brokers[a].alive || !brokers[b].alive;
        const sameRow = pa.y === pb.y;
        const bend = sameRow && (b - a > 1) ? 40 : 0;
        const x1 = pa.x + BOX_W / 2, x2 = pb.x + BOX_W / 2;
        let d;
        if (!sameRow) d = "M" + x1 + "," + (pa.y + BOX_H) + " L" + x2 + "," + pb.y;
        else if (bend) d = "M" + x1 + "," + (pa.y + BOX_H) + " Q" + (x1 + x2) / 2 + "," + (pa.y + BOX_H + bend * 2) + " " + x2 + "," + (pb.y + BOX_H);
        else d = "M" + (pa.x + BOX_W) + "," + (pa.y + BOX_H / 2) + " L" + pb.x + "," + (pb.y + BOX_H / 2);
        const id = "cl-link-" + a + "-" + b;
        seen.add(id);
        const path = KV.keep(linksG, id, function () { return el("path"); });
        path.setAttribute("d", d);
        path.setAttribute("class", "cl-link" + (fault ? " cl-link-cut" : "") + (idle ? " cl-link-idle" : ""));
        // One-way cut: the head points the way messages no longer go.
        if (fault && !(f.ab && f.ba)) {
          path.setAttribute(f.ab ? "marker-end" : "marker-start", "url(#cl-head)");
          path.removeAttribute(f.ab ? "marker-start" : "marker-end");
        } else { path.removeAttribute("marker-end"); path.removeAttribute("marker-start"); }
        const label = KV.keep(linksG, id + "-label", function () { return el("text", { class: "cl-link-label", "text-anchor": "middle" }); });
        const lx = (x1 + x2) / 2, ly = bend ? pa.y + BOX_H + bend + 16 : sameRow ? pa.y + BOX_H / 2 - 8 : (pa.y + BOX_H + pb.y) / 2;
        label.setAttribute("x", lx); label.setAttribute("y", ly);
        let text = "";
        if (fault && !isolated[a] && !isolated[b]) {
          const word = function (x) { return x === "cut" ? KV.t("link_cut") : x; };
          const how = f.ab && f.ba ? (f.ab === f.ba ? word(f.ab) : word(f.ab) + " / " + word(f.ba)) : (f.ab ? a + "→" + b : b + "→" + a) + " " + word(fault);
          text = "✂ " + how;
          desc.push(KV.t("cl_link_desc", { a: a, b: b, text: text }));
        }
        label.textContent = text;
      }
    }
    brokers.forEach(function (b) {
      const p = pos[b.id];
      const g = KV.keep(boxesG, "cl-broker-" + b.id, function () {
        const n = el("g", { class: "cl-broker", "data-broker": b.id, tabindex: "-1" });
        n.append(el("rect", { width: BOX_W, height: BOX_H, rx: 10, class: "cl-box" }),
          el("path", { d: "M0,0 L" + BOX_W + "," + BOX_H + " M" + BOX_W + ",0 L0," + BOX_H, class: "cl-cross" }),
          el("text", { x: 10, y: 22, class: "cl-name" }), el("text", { x: 10, y: 42, class: "cl-status" }),
          el("text", { x: 10, y: 62, class: "cl-role" }), el("text", { x: 10, y: 82, class: "cl-inc" }));
        const c = el("g", { class: "cl-controller", transform: "translate(" + (BOX_W / 2 - 52) + ",-30)" });
        c.append(el("rect", { width: 104, height: 22, rx: 11 }), el("text", { x: 52, y: 15.5, "text-anchor": "middle" }));
        n.append(c);
        n.addEventListener("click", function () { pick(b.id); });
        return n;
      });
      g.setAttribute("transform", "translate(" + p.x + "," + p.y + ")");
      g.setAttribute("class", "cl-broker " + (b.alive ? "up" : "down"));
      const texts = g.querySelectorAll("text");
      texts[0].textContent = KV.brokerName(b.id);
      texts[1].textContent = (b.alive ? "● " + KV.t("up") : "✗ " + KV.t("down")) + (b.fenced ? " · " + KV.t("fenced") : "") +
        (isolated[b.id] ? " · ✂ " + KV.t("isolated") : "");
      const tp = st.partition ? st.partition.topic + "-" + st.partition.partition : (st.topic || "");
      const role = b.replica ? (b.leader ? "♛ " + KV.t("leads") + " " + tp : KV.t("holds") + " " + tp) : KV.t("no_replica");
      texts[2].textContent = role;
      texts[3].textContent = KV.t("started_times", { n: b.incarnation });
      const ctl = g.querySelector(".cl-controller");
      ctl.style.display = b.controller ? "" : "none";
      texts[4].textContent = "★ " + KV.t("controller");
      desc.push(KV.brokerName(b.id) + ": " + (b.alive ? KV.t("up") : KV.t("down")) + (b.fenced ? ", " + KV.t("fenced") : "") +
        (isolated[b.id] ? ", " + KV.t("isolated") : "") +
        (b.controller ? ", " + KV.t("cl_controller_epoch", { epoch: (st.controller || {}).epoch }) : "") + ", " + role.replace("♛ ", ""));
    });
    $("cl-desc").textContent = desc.join(". ");
    const text = $("cluster-text");
    if (text) text.textContent = desc.join(" · ");
  }

  // The broker pickers list every broker of the lesson's scenarios; offer only those of the
  // cluster running now, and move a pick off a broker it does not have (the slow-follower
  // form's default is the highest id, which a smaller scenario may lack).
  function syncBrokerPickers(st) {
    const ids = new Set((st.brokers || []).map(function (b) { return String(b.id); }));
    if (!ids.size) return;
    const slow = $("slow-form");
    [$("broker-pick"), slow && slow.querySelector("select")].forEach(function (sel) {
      if (!sel) return;
      let last = null;
      Array.prototype.forEach.call(sel.options, function (o) {
        const have = ids.has(o.value);
        o.hidden = o.disabled = !have;
        if (have) last = o;
      });
      if (sel.selectedOptions.length && sel.selectedOptions[0].disabled && last) {
        sel.value = last.value;
        sel.dispatchEvent(new Event("change", { bubbles: true }));
      }
    });
  }

  KV.register("cluster", {
    update: function (container, frame) {
      const st = frame.state || {};
      if (frame.reset) container.replaceChildren();
      draw(container, st);
      syncBrokerPickers(st);
      refreshButtons(st);
    },
  });

  document.addEventListener("DOMContentLoaded", function () {
    const sel = $("broker-pick");
    if (sel) sel.addEventListener("change", function () { if (KV.lastFrame) refreshButtons(KV.lastFrame.state || {}); });
    // Buttons that share one form say which command they send.
    document.addEventListener("click", function (e) {
      const btn = e.target.closest && e.target.closest("button[data-type]");
      if (!btn || !btn.form) return;
      const input = btn.form.querySelector('input[name="cmd"]');
      if (input) input.value = btn.dataset.type;
    }, true);
    document.addEventListener("keydown", function (e) {
      if (e.altKey || e.ctrlKey || e.metaKey || KV.typing(e.target)) return;
      if (/^[0-9]$/.test(e.key) && sel && sel.querySelector('option[value="' + e.key + '"]')) { pick(Number(e.key)); e.preventDefault(); }
    });
  });
})();
