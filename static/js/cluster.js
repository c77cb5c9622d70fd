/* The cluster: brokers up or down, the active controller, who holds and leads the
 * lesson's partition, and the network links (cut links dashed with ✂, one-way cuts with
 * an arrow head). Elements are kept by id and updated in place, so a broker going down
 * changes its box rather than redrawing the picture. Clicking a broker picks it for the
 * fault buttons (digits do the same); the buttons that the engine would refuse are
 * marked aria-disabled (they stay focusable; the engine's refusal explains why). */
(function () {
  "use strict";
  const GAP = 12, CLIENT_H = 40;
  let TOP = 36;
  let CLIENT_W = 230;
  let BOX_W = 150, BOX_H = 112, W = 560, perRow = 3;
  // With the replica lanes (lessons 8-11, the sandbox) a broker's box holds its lane: a cell
  // per record (value, leader epoch), the HW and the LEO marked under it.
  const LANE_Y = 84, CELL_H = 30, BOX_H_PLAIN = 112, BOX_H_LANE = 160;
  const el = KV.el;
  const $ = function (id) { return document.getElementById(id); };

  // Brokers in rows as wide as the diagram is (text keeps its real size on a phone), the
  // client -- the engine's one client node, where producers and consumers run -- below them.
  // KRaft with dedicated controllers (lesson 17): the controller nodes are a row of their own
  // above the brokers, keyed by their node ids (100, 101, ...), so raft messages travel
  // between them and to the brokers on the same picture.
  // The gap under the controllers holds their links to each other and one or two rows of
  // tokens resting there (a row that would reach a broker's box is not used: flow.js).
  const CTL_H = 80, CTL_GAP = 60;
  function layout(n, ctlIds) {
    ctlIds = ctlIds || [];
    perRow = Math.max(1, Math.min(Math.max(n, ctlIds.length), Math.floor((W - 12 + GAP) / (92 + GAP))));
    BOX_W = Math.min(200, Math.floor((W - 12 - (perRow - 1) * GAP) / perRow));
    const out = {};
    const rowW = perRow * BOX_W + (perRow - 1) * GAP, left = (W - rowW) / 2;
    const ctlW = ctlIds.length * BOX_W + (ctlIds.length - 1) * GAP, ctlLeft = (W - ctlW) / 2;
    ctlIds.forEach(function (id, i) { out[id] = { x: ctlLeft + i * (BOX_W + GAP), y: TOP, w: BOX_W, h: CTL_H }; });
    const top = TOP + (ctlIds.length ? CTL_H + CTL_GAP : 0);
    for (let i = 0; i < n; i++) {
      const row = Math.floor(i / perRow), col = i % perRow;
      out[i] = { x: left + col * (BOX_W + GAP), y: top + row * (BOX_H + 70), w: BOX_W, h: BOX_H };
    }
    const rows = Math.ceil(n / perRow);
    CLIENT_W = Math.min(230, W - 24);
    out[-1] = { x: (W - CLIENT_W) / 2, y: top + rows * BOX_H + (rows - 1) * 70 + 84, w: CLIENT_W, h: CLIENT_H };
    return out;
  }

  // One controller node's box: its Raft state and epoch, its log end and HW, what it applied.
  function drawController(boxesG, c, p, q, desc) {
    const g = KV.keep(boxesG, "cl-ctl-" + c.node, function () {
      const n = el("g", { class: "cl-broker cl-ctl", "data-broker": c.node, "data-node": c.node, tabindex: "-1" });
      n.append(el("rect", { height: CTL_H, rx: 10, class: "cl-box" }), el("path", { class: "cl-cross" }),
        el("text", { x: 10, y: 20, class: "cl-name" }), el("text", { x: 10, y: 38, class: "cl-status" }),
        el("text", { x: 10, y: 56, class: "cl-role" }), el("text", { x: 10, y: 72, class: "cl-nums" }));
      const b = el("g", { class: "cl-controller" });
      b.append(el("rect", { width: 104, height: 22, rx: 11 }), el("text", { x: 52, y: 15.5, "text-anchor": "middle" }));
      n.append(b);
      n.addEventListener("click", function () { pick(c.node); });
      return n;
    });
    g.setAttribute("transform", "translate(" + p.x + "," + p.y + ")");
    g.setAttribute("class", "cl-broker cl-ctl " + (c.alive ? "up" : "down") + (BOX_W < 130 ? " cl-narrow" : ""));
    g.querySelector(".cl-box").setAttribute("width", BOX_W);
    g.querySelector(".cl-cross").setAttribute("d", "M0,0 L" + BOX_W + "," + CTL_H + " M" + BOX_W + ",0 L0," + CTL_H);
    const texts = g.querySelectorAll(":scope > text");
    const state = c.alive ? KV.t("ml_state_" + c.state) + " · e" + c.epoch : "✗ " + KV.t("down");
    texts[0].textContent = KV.t("cl_ctl_name", { n: c.node });
    texts[1].textContent = state;
    texts[2].textContent = c.alive ? KV.t("cl_ctl_log", { end: c.log_end_offset, hw: c.high_watermark }) : "";
    texts[3].textContent = c.alive && c.applied !== null && c.applied !== undefined ? KV.t("cl_applied", { n: c.applied }) : "";
    for (let i = 0; i < 4; i++) {
      texts[i].removeAttribute("textLength");
      if (texts[i].textContent && texts[i].getComputedTextLength() > BOX_W - 14) {
        texts[i].setAttribute("textLength", BOX_W - 14);
        texts[i].setAttribute("lengthAdjust", "spacingAndGlyphs");
      }
    }
    const badge = g.querySelector(".cl-controller");
    const active = q.active === c.node;
    badge.style.display = active ? "" : "none";
    const bt = badge.querySelector("text");
    bt.textContent = "★ " + KV.t("controller");
    const bw = active ? Math.ceil(bt.getComputedTextLength()) + 18 : 0;
    badge.querySelector("rect").setAttribute("width", bw);
    bt.setAttribute("x", bw / 2);
    badge.setAttribute("transform", "translate(" + Math.max(2 - p.x, Math.min(W - 2 - p.x - bw, BOX_W / 2 - bw / 2)) + ",-28)");
    desc.push(texts[0].textContent + ": " + state + (active ? ", ★ " + KV.t("controller") : "") +
      (texts[2].textContent ? ", " + texts[2].textContent : "") + (texts[3].textContent ? ", " + texts[3].textContent : ""));
  }

  // The way a message goes from node a to node b: three points (start, bend, end), the same
  // for the link drawn and the tokens that travel on it.
  function route(pos, a, b) {
    const pa = pos[a], pb = pos[b];
    if (!pa || !pb) return null;
    const ca = { x: pa.x + pa.w / 2, y: pa.y + pa.h / 2 }, cb = { x: pb.x + pb.w / 2, y: pb.y + pb.h / 2 };
    if (a === -1 || b === -1) {
      const c = a === -1 ? pa : pb, o = a === -1 ? pb : pa;
      const p1 = { x: c.x + c.w / 2 + (o.x + o.w / 2 - (c.x + c.w / 2)) * 0.35, y: c.y };
      const p2 = { x: o.x + o.w / 2, y: o.y + o.h };
      const from = a === -1 ? p1 : p2, to = a === -1 ? p2 : p1;
      return [from, { x: (from.x + to.x) / 2, y: (from.y + to.y) / 2 }, to];
    }
    if (pa.y === pb.y) {
      // Under the boxes, bending further the further apart they are, so a message crosses
      // the whole way between the two brokers rather than the small gap between their boxes.
      // Each link leaves and reaches a box off its centre, towards the other end, so messages
      // converging on one broker from both sides do not meet on one point.
      const cols = Math.round(Math.abs(ca.x - cb.x) / (BOX_W + GAP));
      const lean = Math.sign(cb.x - ca.x) * Math.min(pa.w * 0.22, 40);
      const from = { x: ca.x + lean, y: pa.y + pa.h }, to = { x: cb.x - lean, y: pb.y + pb.h };
      return [from, { x: (from.x + to.x) / 2, y: pa.y + pa.h + 16 + 10 * cols }, to];
    }
    const down = pa.y < pb.y;
    const from = { x: ca.x, y: down ? pa.y + pa.h : pa.y }, to = { x: cb.x, y: down ? pb.y : pb.y + pb.h };
    return [from, { x: (from.x + to.x) / 2, y: (from.y + to.y) / 2 }, to];
  }
  function pathOf(r) {
    // A quadratic through the bend point: control = 2*mid - (start+end)/2.
    const cx = 2 * r[1].x - (r[0].x + r[2].x) / 2, cy = 2 * r[1].y - (r[0].y + r[2].y) / 2;
    return "M" + r[0].x + "," + r[0].y + " Q" + cx + "," + cy + " " + r[2].x + "," + r[2].y;
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
    // A fault button says what its broker must be (data-needs, from the engine's Command.fault).
    document.querySelectorAll("#broker-form button[data-needs]").forEach(function (btn) {
      KV.setDisabled(btn, (btn.dataset.needs === "up") !== !!b.alive,
                     KV.t("cl_button_why", { broker: name, state: b.alive ? up : down }));
    });
  }

  // What broker b holds of the lesson's partition (replication lessons: state.partition and
  // its lanes) or of the topic's partitions (lesson 14: state.partitions), in words.
  function holding(st, b) {
    const tp = st.partition ? st.partition.topic + "-" + st.partition.partition : (st.topic || "");
    if (st.partition || st.lanes) {
      const role = b.replica ? (b.leader ? "♛ " + KV.t("leads") + " " + tp : KV.t("holds") + " " + tp) : KV.t("no_replica");
      const lane = (st.lanes || []).find(function (l) { return l.broker === b.id; });
      let nums = "", isr = "";
      if (lane && lane.alive && lane.leo !== undefined) {
        const inIsr = st.partition && (st.partition.isr || []).indexOf(b.id) >= 0;
        nums = "LEO " + lane.leo + " HW " + lane.high_watermark + (lane.leader_epoch !== null && lane.leader_epoch !== undefined ? " e" + lane.leader_epoch : "");
        isr = st.partition ? (inIsr ? KV.t("in_isr") : KV.t("not_in_isr")) : "";
      }
      return { role: role, nums: nums, isr: isr, records: lane && lane.alive && lane.records ? lane.records : null,
        hw: lane ? lane.high_watermark : null, leo: lane ? lane.leo : null };
    }
    const parts = (st.partitions || []).filter(function (p) { return (p.replicas || []).some(function (r) { return r.broker === b.id; }); });
    const leads = parts.filter(function (p) { return p.leader === b.id; }).map(function (p) { return "p" + p.partition; });
    const role = leads.length ? "♛ " + KV.t("leads") + " " + leads.join(", ") : parts.length ? KV.t("holds") + " " + parts.map(function (p) { return "p" + p.partition; }).join(", ") : KV.t("no_replica");
    const lanes = parts.map(function (p) { return (p.replicas || []).find(function (r) { return r.broker === b.id; }); });
    const lines = lanes.map(function (l, i) { return l && l.leo !== undefined ? "p" + parts[i].partition + " LEO " + l.leo + " HW " + l.high_watermark : null; })
      .filter(Boolean);
    const nums = lines[0] || "", isr = lines.slice(1, 3).join(" · ");
    return { role: role, nums: nums, isr: isr, records: null, hw: null };
  }

  // The replica's log in the box: the newest records that fit, a cell each (value over its
  // epoch, tinted by the epoch), a line at the HW and the LEO's empty slot, both named
  // under the lane. Records older than the first cell shown are counted ("…3").
  function drawLane(g, h) {
    g.replaceChildren();
    if (!h.records) return;
    const left = 10, room = BOX_W - 2 * left;
    const slots = h.records.length + 1;               // the records and the LEO's empty slot
    const cw = Math.max(18, Math.min(36, Math.floor(room / Math.max(slots, 4))));
    const fit = Math.max(1, Math.floor(room / cw) - 1);
    const cut = h.records.length > fit;                // older records than the box holds: "…" before them
    const show = h.records.slice(-(cut ? fit - 1 : fit)), first = show.length ? show[0].offset : h.leo;
    const x0 = left + (cut ? cw : 0);
    const xOf = function (offset) { return x0 + (offset - first) * cw; };
    show.forEach(function (r) {
      const c = el("g", { class: "cl-cell" + (r.acked ? " cl-acked" : "") });
      c.append(el("rect", { x: xOf(r.offset), y: LANE_Y, width: cw - 3, height: CELL_H, rx: 3, class: "cl-rec epoch-" + (r.epoch % 4) }));
      // The record's value when it fits the cell (m1), else its offset (a squeezed word is unreadable).
      const value = String(r.value || r.digest || "");
      const word = value.length * 6.6 <= cw - 4 ? value : String(r.offset);
      const v = el("text", { x: xOf(r.offset) + (cw - 3) / 2, y: LANE_Y + 13, "text-anchor": "middle", class: "cl-cell-value" }, word);
      c.append(v, el("text", { x: xOf(r.offset) + (cw - 3) / 2, y: LANE_Y + 25, "text-anchor": "middle", class: "cl-cell-epoch" }, "e" + r.epoch + (r.acked ? "✓" : "")));
      c.append(el("title", {}, KV.t(r.acked ? "le_cell_title_acked" : "le_cell_title", { offset: r.offset, value: r.value || r.digest, epoch: r.epoch })));
      g.append(c);
      // Measured by its characters (a monospace font), not getComputedTextLength: no layout per cell.
      if (v.textContent.length * 6.7 > cw - 6) { v.setAttribute("textLength", cw - 6); v.setAttribute("lengthAdjust", "spacingAndGlyphs"); }
    });
    if (h.leo !== null && h.leo !== undefined && h.leo >= first) {
      g.append(el("rect", { x: xOf(h.leo), y: LANE_Y, width: cw - 3, height: CELL_H, rx: 3, class: "cl-leo-slot" }));
    }
    if (cut) g.append(el("text", { x: left + (cw - 3) / 2, y: LANE_Y + 19, "text-anchor": "middle", class: "cl-lane-more" }, "…"));
    const marks = [];
    if (h.hw !== null && h.hw !== undefined && h.hw >= first) {
      g.append(el("path", { d: "M" + (xOf(h.hw) - 1.5) + "," + (LANE_Y - 4) + " v" + (CELL_H + 8), class: "cl-hw-mark" }));
      marks.push({ x: xOf(h.hw) - 1.5, text: h.hw === h.leo ? "HW·LEO" : "HW", cls: "cl-lane-hw" });
    }
    if (h.leo !== null && h.leo !== undefined && h.leo >= first && h.leo !== h.hw) {
      marks.push({ x: xOf(h.leo) + (cw - 3) / 2, text: "LEO", cls: "cl-lane-leo" });
    }
    // Two labels closer than their width: the second goes a line lower.
    marks.forEach(function (m, i) {
      const y = LANE_Y + CELL_H + 12 + (i && Math.abs(m.x - marks[0].x) < 30 ? 11 : 0);
      const t = el("text", { x: Math.max(left, Math.min(BOX_W - left, m.x)), y: y, "text-anchor": "middle", class: "cl-lane-mark " + m.cls }, "▲" + m.text);
      g.append(t);
    });
  }

  // KRaft: how far broker b has applied the metadata log (its status line says it).
  function applied(st, b) {
    const n = st.quorum && b.alive ? (st.quorum.applied || {})[String(b.id)] : null;
    return n === null || n === undefined ? "" : " · " + KV.t("cl_applied_short", { n: n });
  }

  function coordinates(st, id) {
    if (st.group && st.group.coordinator === id) return "◆ " + KV.t("cl_group_coordinator");
    if ((st.transactions || []).some(function (t) { return t.coordinator === id; })) return "◆ " + KV.t("cl_txn_coordinator");
    return "";
  }

  function draw(container, st) {
    const brokers = st.brokers || [];
    // Room for a lane only once some replica has a log to draw (lesson 17's pending replicas
    // have none: their boxes stay short, and the picture shares a phone's first screen).
    BOX_H = (st.lanes || []).some(function (l) { return l.alive || l.records; }) ? BOX_H_LANE : BOX_H_PLAIN;
    W = Math.max(320, Math.min(980, container.clientWidth || 560));
    // Room above the boxes for a second badge when the controller's broker also coordinates.
    TOP = brokers.some(function (b) { return b.controller && coordinates(st, b.id); }) ? 62 : 36;
    const quorum = st.quorum && st.quorum.mode === "dedicated" ? st.quorum : null;
    const ctls = quorum ? quorum.controllers || [] : [];
    const pos = layout(brokers.length, ctls.map(function (c) { return c.node; }));
    const rows = Math.ceil(brokers.length / perRow);
    const svg = KV.keep(container, "cl-svg", function () {
      // A phone's stage may scale the picture to 85 % to fit a long sentence above it (KV.fitStage):
      // its small print is drawn at 10.5 px, so no further.
      const s = el("svg", { class: "cl-svg stage-fit", "data-fit-min": "0.85", role: "img", "aria-labelledby": "cl-title cl-desc" });
      s.append(el("title", { id: "cl-title" }, ""), el("desc", { id: "cl-desc" }, ""));
      const defs = el("defs");
      const m = el("marker", { id: "cl-head", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" });
      m.append(el("path", { d: "M0,0 L10,5 L0,10 z", class: "cl-head" }));
      defs.append(m);
      s.append(defs, el("g", { id: "cl-links" }), el("g", { id: "cl-boxes" }), el("g", { id: "cl-flow", "aria-hidden": "true" }));
      return s;
    });
    const H = pos[-1].y + CLIENT_H + 12;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
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
    const links = (st.links || []).concat(st.client_links || []);
    const pairs = [];
    for (let a = 0; a < brokers.length; a++) for (let b = a + 1; b < brokers.length; b++) pairs.push([a, b]);
    brokers.forEach(function (b) { pairs.push([-1, b.id]); });
    pairs.forEach(function (pr) {
      const a = pr[0], b = pr[1];
      const r = route(pos, a, b);
      const f = faultsBetween(links, a, b);
      const fault = f.ab || f.ba;
      const idle = (a >= 0 && !brokers[a].alive) || !brokers[b].alive;
      const id = a === -1 ? "cl-link-c-" + b : "cl-link-" + a + "-" + b;
      const path = KV.keep(linksG, id, function () { return el("path"); });
      path.setAttribute("d", pathOf(r));
      path.setAttribute("class", "cl-link" + (a === -1 ? " cl-link-client" : "") + (fault ? " cl-link-cut" : "") + (idle ? " cl-link-idle" : ""));
      // One-way cut: the head points the way messages no longer go.
      if (fault && !(f.ab && f.ba)) {
        path.setAttribute(f.ab ? "marker-end" : "marker-start", "url(#cl-head)");
        path.removeAttribute(f.ab ? "marker-start" : "marker-end");
      } else { path.removeAttribute("marker-end"); path.removeAttribute("marker-start"); }
      const label = KV.keep(linksG, id + "-label", function () { return el("text", { class: "cl-link-label", "text-anchor": "middle" }); });
      label.setAttribute("x", r[1].x); label.setAttribute("y", r[1].y - 6);
      let text = "";
      if (fault && !(a >= 0 && (isolated[a] || isolated[b]))) {
        const word = function (x) { return x === "cut" ? KV.t("link_cut") : x; };
        const an = a === -1 ? KV.t("cl_client_short") : a;
        const how = f.ab && f.ba ? (f.ab === f.ba ? word(f.ab) : word(f.ab) + " / " + word(f.ba)) : (f.ab ? an + "→" + b : b + "→" + an) + " " + word(fault);
        text = "✂ " + how;
        desc.push(KV.t("cl_link_desc", { a: an, b: b, text: text }));
      }
      label.textContent = text;
    });
    brokers.forEach(function (b) {
      const p = pos[b.id];
      const g = KV.keep(boxesG, "cl-broker-" + b.id, function () {
        const n = el("g", { class: "cl-broker", "data-broker": b.id, "data-node": b.id, tabindex: "-1" });
        n.append(el("rect", { height: BOX_H, rx: 10, class: "cl-box" }), el("path", { class: "cl-cross" }),
          el("text", { x: 10, y: 20, class: "cl-name" }), el("text", { x: 10, y: 38, class: "cl-status" }),
          el("text", { x: 10, y: 56, class: "cl-role" }), el("text", { x: 10, y: 74, class: "cl-nums" }),
          el("text", { x: 10, y: 104, class: "cl-inc" }), el("g", { class: "cl-mini" }));
        const c = el("g", { class: "cl-controller" });
        c.append(el("rect", { width: 104, height: 22, rx: 11 }), el("text", { x: 52, y: 15.5, "text-anchor": "middle" }));
        const k = el("g", { class: "cl-coordinator" });
        k.append(el("rect", { width: 104, height: 22, rx: 11 }), el("text", { x: 52, y: 15.5, "text-anchor": "middle" }));
        n.append(c, k);
        n.addEventListener("click", function () { pick(b.id); });
        return n;
      });
      g.setAttribute("transform", "translate(" + p.x + "," + p.y + ")");
      g.querySelector(".cl-box").setAttribute("height", BOX_H);
      g.querySelector(".cl-inc").setAttribute("y", BOX_H - 8);
      g.setAttribute("class", "cl-broker " + (b.alive ? "up" : "down") + (BOX_W < 130 ? " cl-narrow" : ""));
      g.querySelector(".cl-box").setAttribute("width", BOX_W);
      g.querySelector(".cl-cross").setAttribute("d", "M0,0 L" + BOX_W + "," + BOX_H + " M" + BOX_W + ",0 L0," + BOX_H);
      // The box's own lines and its two badges' words (not the lane's cell texts).
      const texts = Array.prototype.slice.call(g.querySelectorAll(":scope > text")).concat(
        [g.querySelector(".cl-controller").querySelector("text"), g.querySelector(".cl-coordinator").querySelector("text")]);
      texts[0].textContent = KV.brokerName(b.id);
      texts[1].textContent = (b.alive ? "● " + KV.t("up") : "✗ " + KV.t("down")) + (b.fenced ? " · " + KV.t("fenced") : "") +
        (isolated[b.id] ? " · ✂ " + KV.t("isolated") : "") + applied(st, b);
      const h = holding(st, b);
      texts[2].textContent = h.role;
      texts[3].textContent = h.nums;
      texts[4].textContent = [h.isr, b.incarnation !== undefined ? KV.t("started_times", { n: b.incarnation }) : ""].filter(Boolean).join(" · ");
      drawLane(g.querySelector(".cl-mini"), h);
      // A line longer than a narrow box is squeezed to fit it, never cut off.
      for (let i = 0; i < 5; i++) {
        texts[i].removeAttribute("textLength");
        if (texts[i].textContent && texts[i].getComputedTextLength() > BOX_W - 14) {
          texts[i].setAttribute("textLength", BOX_W - 14);
          texts[i].setAttribute("lengthAdjust", "spacingAndGlyphs");
        }
      }
      const ctl = g.querySelector(".cl-controller");
      ctl.style.display = b.controller ? "" : "none";
      texts[5].textContent = "★ " + KV.t("controller");
      // The group's or the transactions' coordinator (lessons 13, 14): a second badge.
      const coord = g.querySelector(".cl-coordinator"), what = coordinates(st, b.id);
      coord.style.display = what ? "" : "none";
      texts[6].textContent = what;
      // Badges as wide as their words, centred on the box (side by side when both fit).
      const fit = function (badge) {
        const t = badge.querySelector("text"), w = badge.style.display === "none" ? 0 : Math.ceil(t.getComputedTextLength()) + 18;
        badge.querySelector("rect").setAttribute("width", w);
        t.setAttribute("x", w / 2);
        return w;
      };
      const cw = fit(ctl), kw = fit(coord);
      const side = cw && kw && cw + kw + 6 <= BOX_W + 20;
      // Within the picture: a badge wider than a phone's box would start left of the first one.
      const within = function (x, w) { return Math.max(2 - p.x, Math.min(W - 2 - p.x - w, x)); };
      ctl.setAttribute("transform", "translate(" + within(side ? BOX_W / 2 - (cw + kw + 6) / 2 : BOX_W / 2 - cw / 2, cw) + ",-28)");
      coord.setAttribute("transform", "translate(" + within(side ? BOX_W / 2 - (cw + kw + 6) / 2 + cw + 6 : BOX_W / 2 - kw / 2, kw) + "," +
        (cw && kw && !side ? -54 : -28) + ")");
      if (what) desc.push(KV.brokerName(b.id) + ": " + what);
      desc.push(KV.brokerName(b.id) + ": " + (b.alive ? KV.t("up") : KV.t("down")) + (b.fenced ? ", " + KV.t("fenced") : "") +
        (isolated[b.id] ? ", " + KV.t("isolated") : "") +
        (b.controller ? ", " + KV.t("cl_controller_epoch", { epoch: (st.controller || {}).epoch }) : "") + ", " + h.role.replace("♛ ", "") +
        (h.nums ? " (" + h.nums + (h.isr ? ", " + h.isr : "") + ")" : ""));
    });
    ctls.forEach(function (c) { drawController(boxesG, c, pos[c.node], quorum, desc); });
    const client = KV.keep(boxesG, "cl-client", function () {
      const n = el("g", { class: "cl-client", "data-node": "-1" });
      n.append(el("rect", { height: CLIENT_H, rx: 20, class: "cl-client-box" }),
        el("text", { y: 25, "text-anchor": "middle", class: "cl-client-name" }));
      return n;
    });
    client.querySelector("rect").setAttribute("width", CLIENT_W);
    client.querySelector("text").setAttribute("x", CLIENT_W / 2);
    client.setAttribute("transform", "translate(" + pos[-1].x + "," + pos[-1].y + ")");
    client.querySelector("text").textContent = KV.t("cl_client");
    $("cl-desc").textContent = desc.join(". ");
    const text = $("cluster-text");
    if (text) text.textContent = desc.join(" · ");
    KV.clusterRoute = function (a, b) { return route(pos, a, b); };
    KV.clusterNode = function (id) { return pos[id] || null; };
    KV.clusterBoxes = function () { return Object.keys(pos).map(function (k) { return pos[k]; }); };
    KV.clusterWidth = W;
  }

  // The broker pickers list every broker of the lesson's scenarios; offer only those of the
  // cluster running now, and move a pick off a broker it does not have (the slow-follower
  // form's default is the highest id, which a smaller scenario may lack).
  function syncBrokerPickers(st) {
    const ids = new Set((st.brokers || []).map(function (b) { return String(b.id); }));
    ((st.quorum && st.quorum.mode === "dedicated" && st.quorum.controllers) || []).forEach(function (c) { ids.add(String(c.node)); });
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
      const btn = e.target.closest && e.target.closest("button[data-cmd]");
      if (!btn || !btn.form) return;
      const input = btn.form.querySelector('input[name="cmd"]');
      if (input) input.value = btn.dataset.cmd;
    }, true);
    // The settings form names one entry of set_config's changes object: changes.name and
    // changes.value become {"changes": {name: value}}, the engine's own command.
    document.addEventListener("htmx:wsConfigSend", function (e) {
      const p = Object.assign({}, e.detail.parameters);
      if (!("changes.name" in p)) return;
      p.changes = {};
      p.changes[p["changes.name"]] = p["changes.value"];
      delete p["changes.name"]; delete p["changes.value"];
      e.detail.messageBody = JSON.stringify(p);
    });
    document.addEventListener("keydown", function (e) {
      if (e.altKey || e.ctrlKey || e.metaKey || KV.typing(e.target)) return;
      if (/^[0-9]$/.test(e.key) && sel && sel.querySelector('option[value="' + e.key + '"]')) { pick(Number(e.key)); e.preventDefault(); }
    });
  });
})();
