/* Replica lanes (lesson 10): one lane per broker holding the partition, drawn from the
 * engine's state in each frame. A cell per record ("m2" + "e0" = leader epoch of its
 * batch), LEO and HW markers, the leader's crown with its epoch, ISR badges in text,
 * the producer's acknowledged records (lost ones marked ✗ LOST), the fetch and
 * OffsetsForLeaderEpoch requests of the frame's events as arrows, and the records a
 * replica_truncated event cut away as ghost cells. Nothing here is invented: a lane
 * shows only what the engine's state and events say. */
(function () {
  "use strict";
  const CELL_W = 64, CELL_H = 42, LABEL_W = 170, ROW_GAP = 42, TOP = 34, ARROW_W = 110;
  const el = KV.el, brokerName = KV.brokerName, shortName = KV.shortName;

  // The previous frame's lanes, to draw what a truncation cut (the new state no longer has it).
  const previous = { runId: null, lanes: {} };

  function cutsOf(frame) {
    const cuts = {};
    (frame.events || []).forEach(function (ev) {
      if (ev.kind === "replica_truncated" && ev.to_offset < ev.from_offset) {
        const c = cuts[ev.broker] || (cuts[ev.broker] = { from: ev.from_offset, to: ev.to_offset, reasons: [] });
        c.from = Math.max(c.from, ev.from_offset);
        c.to = Math.min(c.to, ev.to_offset);
        c.reasons.push(ev.reason);
      }
    });
    return cuts;
  }

  function messagesOf(frame) {
    // The last request/answer of each kind between each pair: a step can hold dozens of
    // fetches; the newest ones say where replication stands (the timeline has them all).
    const out = {};
    (frame.events || []).forEach(function (ev) {
      let key = null, m = null;
      if (ev.kind === "fetch_sent") {
        key = "req" + ev.broker; m = { from: ev.broker, to: ev.leader, label: KV.t("le_fetch", { offset: ev.fetch_offset }), kind: "fetch" };
      } else if (ev.kind === "fetch_answered") {
        key = "resp" + ev.follower;
        const label = ev.error ? KV.t("le_answer_error", { error: ev.error, hw: ev.high_watermark })
          : ev.records ? KV.t("le_answer_records", { range: ev.first_offset + (ev.last_offset !== ev.first_offset ? "–" + ev.last_offset : ""),
            hw: ev.high_watermark })
          : KV.t("le_answer_none", { hw: ev.high_watermark });
        m = { from: ev.broker, to: ev.follower, label: label, kind: "answer" };
      } else if (ev.kind === "epoch_request_sent") {
        key = "ereq" + ev.broker; m = { from: ev.broker, to: ev.leader, label: "OffsetsForLeaderEpoch(" + ev.epoch + ")", kind: "epoch" };
      } else if (ev.kind === "epoch_request_answered") {
        key = "eresp" + ev.follower;
        m = { from: ev.broker, to: ev.follower, label: KV.t("le_epoch_ends", { epoch: ev.requested_epoch, offset: ev.end_offset }), kind: "epoch" };
      }
      if (key) out[key] = m;
    });
    return Object.keys(out).map(function (k) { return out[k]; });
  }

  // Cells, markers and lanes carry stable ids and a style transform, and each frame is
  // morphed into the SVG already on the page (KV.morph): a record that moves, a HW that
  // advances, slide there instead of being redrawn.
  function cell(g, x, y, rec, cls, extra, id) {
    const c = el("g", { class: "le-cell " + cls, id: id, style: "transform: translate(" + x + "px," + y + "px)" });
    c.append(el("rect", { width: CELL_W - 4, height: CELL_H, rx: 4, class: "le-cell-bg epoch-" + (rec.epoch % 4) }));
    c.append(el("text", { x: (CELL_W - 4) / 2, y: 18, class: "le-cell-value", "text-anchor": "middle" }, rec.value || rec.digest));
    c.append(el("text", { x: (CELL_W - 4) / 2, y: 34, class: "le-cell-epoch", "text-anchor": "middle" },
      "e" + rec.epoch + (extra || "")));
    const title = el("title", {}, KV.t(rec.acked ? "le_cell_title_acked" : "le_cell_title",
      { offset: rec.offset, value: rec.value || rec.digest, epoch: rec.epoch }));
    c.append(title);
    g.append(c);
    return c;
  }

  // A topic with several partitions (the sandbox's own cluster): the lanes show one, a
  // select (keyboard: Tab, arrows) switches; the heading names the one shown.
  function partitionSwitch(st) {
    const tp = document.getElementById("lanes-tp");
    if (tp && st.partition) tp.textContent = st.partition.topic + "-" + st.partition.partition;
    const form = document.getElementById("partition-form");
    const sel = document.getElementById("partition-select");
    if (!form || !sel) return;
    const ids = st.partition_ids || [];
    form.hidden = ids.length < 2;
    if (sel.dataset.ids !== ids.join(",")) {
      sel.replaceChildren.apply(sel, ids.map(function (i) { return KV.html("option", { value: i }, st.topic + "-" + i); }));
      sel.dataset.ids = ids.join(",");
    }
    if (st.partition && document.activeElement !== sel) sel.value = String(st.partition.partition);
  }

  function draw(container, frame) {
    const st = frame.state || {};
    const lanes = st.lanes || [];
    const part = st.partition;
    const shown = part ? part.partition : null;
    if (previous.runId !== st.run_id || previous.shown !== shown) {
      previous.lanes = {}; previous.runId = st.run_id; previous.shown = shown;
    }
    partitionSwitch(st);
    verdict(st);
    const consumerLine = document.getElementById("lanes-consumer");
    if (consumerLine) {
      const c = st.consumer;
      consumerLine.textContent = c ? KV.t("consumer_read", { n: c.records, from: c.offset, broker: brokerName(c.broker),
        next: c.next_offset, hw: c.high_watermark }) : KV.t("consumer_none");
    }
    if (!part) {
      container.replaceChildren(KV.html("p", { class: "note" }, KV.t("no_topic")));
      const t = document.getElementById("lanes-text");
      if (t) t.textContent = "";
      return;
    }
    const cuts = frame.snapshot ? {} : cutsOf(frame);
    const msgs = frame.snapshot ? [] : messagesOf(frame);
    const acked = st.acknowledged || [];
    let maxOff = 0;
    lanes.forEach(function (l) { if (l.alive) maxOff = Math.max(maxOff, l.leo); });
    acked.forEach(function (a) { maxOff = Math.max(maxOff, a.offset + 1); });
    Object.keys(cuts).forEach(function (b) { maxOff = Math.max(maxOff, cuts[b].from); });
    const cols = Math.max(maxOff + 1, 4);
    // The producer's rows: a second row when two acknowledged records share an offset
    // (the divergence scenario acknowledges m2 and, later, m3 at offset 1).
    const slot = {};
    let prodRows = 1;
    acked.forEach(function (a) {
      a._row = slot[a.offset] = (slot[a.offset] === undefined ? 0 : slot[a.offset] + 1);
      prodRows = Math.max(prodRows, a._row + 1);
    });
    const TOP_L = TOP + (prodRows - 1) * (CELL_H + 6);
    const rows = lanes.length + 1;  // + the producer's row
    const width = LABEL_W + cols * CELL_W + ARROW_W;
    const CUT_STRIP = 30;  // under a lane that a truncation cut in this frame: the cut records
    const laneTop = {};
    let yAcc = TOP_L + (CELL_H + ROW_GAP);
    lanes.forEach(function (l) { laneTop[l.broker] = yAcc; yAcc += CELL_H + ROW_GAP + (cuts[l.broker] ? CUT_STRIP : 0); });
    const height = yAcc + 10;
    const svg = el("svg", { viewBox: "0 0 " + width + " " + height, width: width, class: "le-svg", role: "img",
      "aria-labelledby": "lanes-svg-title lanes-svg-desc" });
    svg.append(el("title", { id: "lanes-svg-title" }, part.topic + "-" + part.partition));
    const desc = [];

    // Offsets header; where the checker found the replicas diverged, the offsets whose
    // records differ between live replicas are marked "≠".
    const differ = {};
    if (part.diverged) {
      const at = {};
      lanes.forEach(function (l) {
        (l.records || []).forEach(function (r) { (at[r.offset] = at[r.offset] || new Set()).add(r.digest); });
      });
      Object.keys(at).forEach(function (o) { if (at[o].size > 1) differ[o] = true; });
    }
    for (let o = 0; o < cols; o++) {
      svg.append(el("text", { x: LABEL_W + o * CELL_W + (CELL_W - 4) / 2, y: 16, class: "le-offset" + (differ[o] ? " le-differ" : ""),
        "text-anchor": "middle" }, (differ[o] ? "≠ " : "") + KV.t("offset") + " " + o));
      if (differ[o]) desc.push(KV.t("le_differ", { offset: o }));
    }

    // The producer's row: what the client was told.
    const py = TOP;
    svg.append(el("text", { x: 8, y: py + 17, class: "le-lane-name" }, KV.t("producer_told")));
    svg.append(el("text", { x: 8, y: py + 34, class: "le-lane-sub" }, KV.t("acks_acked")));
    const prodG = el("g", {});
    acked.forEach(function (a) {
      const rec = { offset: a.offset, value: a.value, epoch: 0, digest: a.digest };
      const c = cell(prodG, LABEL_W + a.offset * CELL_W, py + a._row * (CELL_H + 6), rec, "le-acked" + (a.lost ? " le-lost" : ""),
        "", "le-acked-" + a.offset + "-" + a._row);
      // Replace the epoch line: the client does not know epochs; it knows ✓ or LOST.
      c.querySelector(".le-cell-epoch").textContent = a.lost ? KV.t("lost") : KV.t("acked");
      c.querySelector(".le-cell-bg").setAttribute("class", "le-cell-bg " + (a.lost ? "le-lost-bg" : "le-acked-bg"));
      c.querySelector("title").textContent = KV.t(a.lost ? "le_told_title_lost" : "le_told_title", { value: a.value, offset: a.offset });
      desc.push(KV.t(a.lost ? "le_told_desc_lost" : "le_told_desc", { value: a.value, offset: a.offset }));
    });
    svg.append(prodG);

    const laneY = {};
    lanes.forEach(function (lane, i) {
      const y = laneTop[lane.broker];
      laneY[lane.broker] = y;
      const g = el("g", { class: "le-lane" + (lane.alive || lane.pending ? "" : " le-down"), id: "lane-" + lane.broker });
      const isLeader = lane.alive && lane.role === "leader";
      const inIsr = (part.isr || []).indexOf(lane.broker) >= 0;
      g.append(el("text", { x: 8, y: y + 17, class: "le-lane-name" }, (isLeader ? "♛ " : "") + brokerName(lane.broker)));
      let sub;
      if (!lane.alive) sub = lane.pending ? KV.t("up") : KV.t("down");
      else if (isLeader) sub = KV.t("le_sub_leader", { epoch: lane.leader_epoch });
      else if (lane.role === "follower") sub = KV.t("le_sub_follower", { epoch: lane.leader_epoch });
      else sub = KV.t("no_role");
      g.append(el("text", { x: 8, y: y + 34, class: "le-lane-sub" + (isLeader ? " le-crown" : "") }, sub));
      // ISR badge, text not colour.
      const badge = el("g", { class: "le-isr " + (inIsr ? "in" : "out"), transform: "translate(8," + (y + 40) + ")" });
      badge.append(el("rect", { width: inIsr ? 58 : 86, height: 17, rx: 8 }));
      badge.append(el("text", { x: 6, y: 12.5 }, inIsr ? KV.t("in_isr") : KV.t("not_in_isr")));
      g.append(badge);

      const laneW = cols * CELL_W;
      g.append(el("rect", { x: LABEL_W - 4, y: y - 4, width: laneW + 4, height: CELL_H + 8, rx: 6,
        class: "le-track" + (lane.alive || lane.pending ? "" : " le-track-down") }));
      const text = [lane.alive || lane.pending ? brokerName(lane.broker) : KV.t("le_lane_down", { broker: brokerName(lane.broker) })];
      if (lane.pending) {
        // Up, but the controller's word of the new partition has not reached it yet.
        g.append(el("text", { x: LABEL_W + 10, y: y + 26, class: "le-pending-text" }, KV.t("le_lane_pending")));
        text.push(KV.t("le_lane_pending"));
      } else if (!lane.alive) {
        g.append(el("text", { x: LABEL_W + 10, y: y + 26, class: "le-down-text" },
          "✗ " + KV.t("down_log_closed")));
      } else {
        const recs = lane.records || [];
        // ◆: the latest consumer read took this record from this broker's log (always below its HW).
        const cons = st.consumer && st.consumer.broker === lane.broker ? st.consumer : null;
        recs.forEach(function (r) {
          const read = cons && r.offset >= cons.offset && r.offset < cons.next_offset;
          cell(g, LABEL_W + r.offset * CELL_W, y, r, read ? "le-read" : "", (r.acked ? " ✓" : "") + (read ? " ◆" : ""),
            "le-cell-" + lane.broker + "-" + r.offset);
        });
        text.push(KV.t("le_lane_text", {
          role: isLeader ? KV.t("le_role_leader", { epoch: lane.leader_epoch })
            : lane.role === "follower" ? KV.t("le_role_follower", { epoch: lane.leader_epoch }) : KV.t("no_role"),
          isr: inIsr ? KV.t("in_isr") : KV.t("not_in_isr"),
          log: recs.map(function (r) { return r.value + "@" + r.offset + "(e" + r.epoch + ")"; }).join(" ") || KV.t("empty"),
          leo: lane.leo, hw: lane.high_watermark }));
        // Ghost cells: what the truncation in this frame cut away.
        const cut = cuts[lane.broker];
        if (cut) {
          const before = (previous.lanes[lane.broker] && previous.lanes[lane.broker].records) || [];
          // The cut records drop into a strip under the lane (the offsets may hold new
          // records already, e.g. m3 fetched right after m2 was cut).
          const sy = y + CELL_H + 22;
          for (let o = cut.to; o < cut.from; o++) {
            const old = before.find(function (r) { return r.offset === o; }) || { offset: o, value: "?", epoch: "?", digest: "?" };
            const gc = el("g", { class: "le-ghost" + (KV.reducedMotion() ? "" : " le-cutting"), id: "le-ghost-" + frame.frame_seq + "-" + lane.broker + "-" + o,
              transform: "translate(" + (LABEL_W + o * CELL_W) + "," + sy + ")" });
            gc.append(el("rect", { width: CELL_W - 4, height: 24, rx: 4, class: "le-cell-bg" }));
            gc.append(el("text", { x: (CELL_W - 4) / 2, y: 16, class: "le-cell-value le-ghost-value", "text-anchor": "middle" },
              "✂ " + (old.value || old.digest) + " e" + old.epoch));
            gc.append(el("title", {}, KV.t("le_ghost_title", { offset: o, value: old.value || old.digest })));
            g.append(gc);
          }
          g.append(el("text", { x: LABEL_W + cut.from * CELL_W + 6, y: sy + 16, class: "le-cut-label" },
            "✂ " + cut.from + " → " + cut.to + " (" + cut.reasons.map(function (r) { return KV.t("le_reason_" + r); }).join(", ") + ")"));
          text.push(KV.t("le_truncated", { from: cut.from, to: cut.to }));
        }
        // LEO above the lane, HW below: both sit on the boundary before their offset.
        const leoX = LABEL_W + lane.leo * CELL_W - 2;
        const leo = el("g", { id: "le-leo-" + lane.broker, class: "le-marker", style: "transform: translate(" + leoX + "px," + y + "px)" });
        leo.append(el("path", { d: "M-6,-10 l12,0 l-6,9 z", class: "le-leo" }),
          el("text", { x: 8, y: -3, class: "le-marker-text" }, "LEO " + lane.leo));
        g.append(leo);
        const hwX = LABEL_W + lane.high_watermark * CELL_W - 2;
        const hw = el("g", { id: "le-hw-" + lane.broker, class: "le-marker", style: "transform: translate(" + hwX + "px," + y + "px)" });
        hw.append(el("line", { x1: 0, x2: 0, y1: -4, y2: CELL_H + 4, class: "le-hw-line" }),
          el("path", { d: "M-6," + (CELL_H + 14) + " l12,0 l-6,-9 z", class: "le-hw" }),
          el("text", { x: 8, y: CELL_H + 16, class: "le-marker-text" }, "HW " + lane.high_watermark));
        g.append(hw);
      }
      desc.push(text.join(": "));
      svg.append(g);
    });

    // Requests of this frame, as numbered arrows in the right margin between the lanes; their
    // words go in the numbered list under the diagram (readable at any width).
    const ax = LABEL_W + cols * CELL_W + 20;
    const arrowList = document.getElementById("lanes-arrows");
    if (arrowList) arrowList.replaceChildren();
    const alive = {};
    lanes.forEach(function (l) { alive[l.broker] = l.alive; });
    msgs.forEach(function (m, i) {
      const y1 = laneY[m.from], y2 = laneY[m.to];
      if (y1 === undefined || y2 === undefined) return;
      if (!alive[m.to]) m.label = KV.t("le_arrow_lost", { label: m.label, broker: shortName(m.to) });
      const x = ax + (i % 4) * 14;
      const a = y1 + CELL_H / 2 + (m.kind === "answer" ? 6 : -6), b = y2 + CELL_H / 2 + (m.kind === "answer" ? 6 : -6);
      const path = el("path", { id: "le-arrow-" + frame.frame_seq + "-" + i,
        d: "M" + (x - 14) + "," + a + " C" + (x + 30) + "," + a + " " + (x + 30) + "," + b + " " + (x - 10) + "," + b,
        class: "le-arrow le-arrow-" + m.kind + (KV.reducedMotion() ? "" : " le-draw"), "marker-end": "url(#le-head)" });
      svg.append(path);
      svg.append(el("text", { x: x + 26, y: (a + b) / 2 + 4, class: "le-arrow-label le-arrow-label-" + m.kind }, String(i + 1)));
      if (arrowList) {
        arrowList.append(KV.html("li", { class: "le-arrow-item le-arrow-label-" + m.kind },
          shortName(m.from) + " → " + shortName(m.to) + ": " + m.label));
      }
      desc.push(KV.t("le_arrow_desc", { from: brokerName(m.from), to: brokerName(m.to), label: m.label }));
    });
    const defs = el("defs", {});
    const marker = el("marker", { id: "le-head", viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(el("path", { d: "M0,0 L10,5 L0,10 z", class: "le-arrow-head" }));
    defs.append(marker);
    svg.prepend(defs);
    svg.append(el("desc", { id: "lanes-svg-desc" }, desc.join(". ")));

    const old = container.querySelector("svg.le-svg");
    if (old && !frame.reset) KV.morph(old, svg); else container.replaceChildren(svg);
    const summary = document.getElementById("lanes-text") || KV.html("p");
    summary.textContent = KV.t("le_summary", { leader: part.leader === null || part.leader === undefined ? "—" : brokerName(part.leader),
      epoch: part.leader_epoch, isr: (part.isr || []).join(", "), hw: part.high_watermark === null ? "–" : part.high_watermark }) +
      (part.diverged ? KV.t("le_summary_diverged") : "") +
      ((st.verdict && st.verdict.lost.length) ? KV.t("le_summary_lost", { values: st.verdict.lost.join(", ") }) : "");
    const lanesDl = KV.keep(container, "lanes-desc-list", function () { return KV.html("ul", { class: "visually-hidden" }); });
    lanesDl.replaceChildren.apply(lanesDl, desc.map(function (d) { return KV.html("li", {}, d); }));

    previous.lanes = {};
    lanes.forEach(function (l) { previous.lanes[l.broker] = l; });
  }

  // The verdict on the partition right now (decided by the server; worded here).
  function verdict(st) {
    const box = document.getElementById("verdict");
    const v = st.verdict;
    if (!box || !v) return;
    const lines = [];
    if (v.kind === "lost") lines.push(KV.t("verdict_lost", { values: v.lost.join(", ") }));
    else if (v.kind === "ok") lines.push(KV.t("verdict_ok"));
    else if (v.kind === "no_leader") lines.push(KV.t("verdict_no_leader"));
    else lines.push(KV.t("verdict_none_acked"));
    if (v.kind === "no_leader" && v.lost.length) lines.push(KV.t("verdict_lost", { values: v.lost.join(", ") }));
    if (v.diverged) lines.push(KV.t("verdict_diverged"));
    (v.findings || []).forEach(function (f) { lines.push(KV.t("checker", { text: f })); });
    if (st.expected_note) lines.push(st.expected_note);
    box.className = "verdict " + (v.kind === "lost" || v.diverged ? "bad" : v.kind === "ok" ? "good" : "neutral");
    box.replaceChildren.apply(box, lines.map(function (t) { return KV.html("p", {}, t); }));
  }

  KV.register("replica-lanes", {
    update: function (container, frame) { draw(container, frame); },
  });
})();
