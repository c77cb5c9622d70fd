/* The timing wheels (lesson 15): a broker's two purgatories -- produce (DelayedProduce) and
 * fetch (DelayedFetch) -- each on its own wheels, drawn from the engine's SystemTimer.state() in
 * each frame (state.timers, produce first). A switch picks the purgatory; its buttons count the
 * tasks waiting in each and the wheel moves of this frame. For the shown one: a ring per level
 * (wheelSize buckets, the hand at the wheel's current time, each non-empty bucket with its task
 * count), the tasks of each level, the delay queue of non-empty buckets, and this frame's timer
 * events of that wheel (added, cascaded from level to level, completed, timed out). */
(function () {
  "use strict";
  const SIZE = 200;
  // A ring's radii and the size of its numbers (in the ring's own units). On a phone the ring
  // is drawn at 60 % (120 px), so its numbers are larger in its units -- at least 11 px as
  // shown -- and the ring a little thinner to leave them room inside the picture.
  const PHONE = window.matchMedia ? window.matchMedia("(max-width: 600px)") : { matches: false };
  function geometry() {
    return PHONE.matches ? { R: 72, R_IN: 46, slotFont: 19, countFont: 20, phone: true }
      : { R: 78, R_IN: 50, slotFont: 11, countFont: 12, phone: false };
  }
  let R = 78, R_IN = 50;
  const el = KV.el, html = KV.html;
  const lastAngle = {};   // "purgatory:level" -> the hand's angle in the previous frame drawn
  let chosen = "produce";  // the purgatory the reader picked

  function short(name) { return String(name).replace(/^(produce|fetch):/, ""); }

  function slotPath(i, n) {
    const a0 = (i / n) * 2 * Math.PI - Math.PI / 2, a1 = ((i + 1) / n) * 2 * Math.PI - Math.PI / 2;
    const c = SIZE / 2;
    const p = function (r, a) { return (c + r * Math.cos(a)).toFixed(1) + " " + (c + r * Math.sin(a)).toFixed(1); };
    return "M " + p(R_IN, a0) + " L " + p(R, a0) + " A " + R + " " + R + " 0 0 1 " + p(R, a1) + " L " + p(R_IN, a1) +
      " A " + R_IN + " " + R_IN + " 0 0 0 " + p(R_IN, a0) + " Z";
  }

  function ring(purgatory, level, touched, animate) {
    const n = level.wheel_size, c = SIZE / 2, g = geometry();
    R = g.R; R_IN = g.R_IN;
    const svg = el("svg", { viewBox: "0 0 " + SIZE + " " + SIZE, width: SIZE, height: SIZE, class: "tw-ring stage-fit" + (g.phone ? " tw-ring-phone" : ""), role: "img",
      "aria-labelledby": "tw-l" + level.level + "-t" });
    svg.append(el("title", { id: "tw-l" + level.level + "-t" }, KV.t("tw_level_desc", { level: level.level,
      tick: level.tick_ms, n: n, interval: level.interval_ms, hand: level.hand })));
    const full = {};
    (level.buckets || []).forEach(function (b) { full[b.slot] = b; });
    for (let i = 0; i < n; i++) {
      const b = full[i];
      const cls = "tw-slot" + (b ? " tw-full" : "") + (i === level.hand ? " tw-at-hand" : "") +
        (touched[level.level + ":" + i] ? " tw-touched" : "");
      const path = el("path", { d: slotPath(i, n), class: cls, "data-slot": i });
      path.append(el("title", {}, KV.t("tw_bucket", { slot: i }) + (b ? ": " + b.tasks.length + " · " + KV.t("tw_due", { ms: b.expiration_ms }) : "")));
      svg.append(path);
      if (b) {
        const a = ((i + 0.5) / n) * 2 * Math.PI - Math.PI / 2, r = (R + R_IN) / 2;
        svg.append(el("text", { x: c + r * Math.cos(a), y: c + r * Math.sin(a) + g.countFont * 0.35, "text-anchor": "middle",
          class: "tw-count" }, String(b.tasks.length)));
      }
    }
    // Slot numbers every 5 buckets, outside the ring.
    const rl = R + 4 + g.slotFont * 0.55;
    for (let i = 0; i < n; i += 5) {
      const a = ((i + 0.5) / n) * 2 * Math.PI - Math.PI / 2;
      svg.append(el("text", { x: c + rl * Math.cos(a), y: c + rl * Math.sin(a) + g.slotFont * 0.35, "text-anchor": "middle",
        class: "tw-slotno" }, String(i)));
    }
    // The hand turns forward from where the previous frame left it (a CSS transition on an
    // unwrapped angle, so passing bucket 0 keeps turning clockwise); a rewind or reduced motion jumps.
    const ah = ((level.hand + 0.5) / n) * 360;
    const key = purgatory + ":" + level.level;
    const from = lastAngle[key];
    const target = from === undefined || !animate ? ah : from + (((ah - from) % 360) + 360) % 360;
    const hand = el("g", { class: "tw-hand", "data-angle": ah.toFixed(1),
      style: "transform-origin: " + c + "px " + c + "px; transform: rotate(" + (from === undefined || !animate ? ah : from).toFixed(1) + "deg)" });
    lastAngle[key] = target;
    if (animate && from !== undefined && target !== from) {
      window.requestAnimationFrame(function () { window.requestAnimationFrame(function () {
        hand.style.transform = "rotate(" + target.toFixed(1) + "deg)";
      }); });
    }
    hand.append(el("line", { x1: c, y1: c, x2: c, y2: c - R_IN + 4, class: "tw-hand-line" }));
    hand.append(el("circle", { cx: c, cy: c, r: 4, class: "tw-hub" }));
    svg.append(hand);
    return svg;
  }

  function frameMoves(frame, timer) {
    const moves = [], touched = {}, fetch = timer.purgatory === "fetch";
    (frame.events || []).forEach(function (ev) {
      if (ev.timer !== timer.name) return;
      if (ev.kind === "timer_task_added") {
        touched[ev.level + ":" + ev.slot] = true;
        moves.push({ cls: "tw-added", text: KV.t("tw_added", { task: short(ev.name), level: ev.level, slot: ev.slot, ms: ev.expiration_ms }) });
      } else if (ev.kind === "timer_task_cascaded") {
        touched[ev.to_level + ":" + ev.slot] = true;
        moves.push({ cls: "tw-cascaded", text: KV.t("tw_cascaded", { task: short(ev.name), from: ev.from_level, to: ev.to_level, slot: ev.slot }) });
      } else if (ev.kind === "timer_task_cancelled") {
        moves.push({ cls: "tw-cancelled", text: KV.t(fetch ? "tw_fetch_cancelled" : "tw_cancelled", { task: short(ev.name) }) });
      } else if (ev.kind === "timer_task_expired") {
        moves.push({ cls: fetch ? "tw-waited" : "tw-expired",
          text: KV.t(fetch ? "tw_fetch_expired" : "tw_expired", { task: short(ev.name), ms: ev.expiration_ms }) });
      } else if (ev.kind === "timer_overflow_wheel_created") {
        moves.push({ cls: "tw-created", text: KV.t("tw_created", { level: ev.level, tick: ev.tick_ms, interval: ev.interval_ms }) });
      } else if (ev.kind === "timer_bucket_expired") {
        moves.push({ cls: "tw-bucket", text: KV.t("tw_bucket_due", { level: ev.level, slot: ev.slot, ms: ev.expiration_ms, n: ev.tasks }) });
      }
    });
    return { moves: moves, touched: touched };
  }

  /* The purgatory switch: one button per purgatory, pressed = shown. */
  function switcher(element, timers, movesOf) {
    const box = html("div", { class: "tw-switch", role: "group", "aria-label": KV.t("tw_switch_label") });
    timers.forEach(function (t) {
      const b = html("button", { type: "button", class: "secondary tw-switch-btn", "data-purgatory": t.purgatory,
        "aria-pressed": String(t.purgatory === chosen) },
        KV.t("tw_switch_" + t.purgatory, { n: t.pending, moves: movesOf[t.purgatory].moves.length }));
      b.addEventListener("click", function () {
        if (chosen === t.purgatory) return;
        chosen = t.purgatory;
        draw(element, element._twFrame, false);
        const again = element.querySelector('.tw-switch-btn[data-purgatory="' + t.purgatory + '"]');
        if (again) again.focus();
      });
      box.append(b);
    });
    return box;
  }

  function draw(element, frame, mayAnimate) {
    const st = frame.state || {};
    const timers = st.timers || [];
    if (!timers.length) { element.replaceChildren(html("p", { class: "note" }, KV.t("tw_no_leader"))); return; }
    const t = timers.find(function (x) { return x.purgatory === chosen; }) || timers[0];
    const movesOf = {};
    timers.forEach(function (x) { movesOf[x.purgatory] = frame.snapshot ? { moves: [], touched: {} } : frameMoves(frame, x); });
    const fm = movesOf[t.purgatory];
    const animate = mayAnimate && !frame.snapshot && !frame.reset && !KV.reducedMotion() &&
      !(frame.events || []).some(function (ev) { return ev.kind === "run_moved" && ev.how !== "step"; });
    const head = html("p", { class: "tw-head", id: "tw-head" }, KV.t("tw_head", { broker: t.broker,
      purgatory: KV.t("tw_name_" + t.purgatory), now: t.now_ms, clock: st.clock_ms, pending: t.pending }));
    const parts = [switcher(element, timers, movesOf), head];
    if (t.purgatory === "fetch") parts.push(html("p", { class: "tw-legend" }, KV.t("tw_fetch_legend")));
    // The wheels are the stage's picture (data-stage-main: what must fit the first screen); the
    // delay queue and the step's moves that follow them are their notes.
    const rings = html("div", { class: "tw-rings", "data-stage-main": "", "data-purgatory": t.purgatory });
    const levels = (t.levels || []).slice().reverse();   // the coarsest wheel first, the 1 ms wheel last
    levels.forEach(function (level) {
      const box = html("figure", { class: "tw-level", id: "tw-level-" + level.level, "data-level": level.level });
      box.append(html("figcaption", { class: "tw-caption" }, KV.t("tw_caption", { level: level.level, tick: level.tick_ms,
        interval: level.interval_ms, n: level.wheel_size })));
      box.append(html("p", { class: "tw-now" }, KV.t("tw_now", { ms: level.current_time_ms, slot: level.hand })));
      box.append(ring(t.purgatory, level, fm.touched, animate));
      // On a short stage the rings scale and the lists scroll to fit the window (KV.fitStage).
      const tasks = html("ul", { class: "tw-tasks stage-fit", tabindex: "0" });
      (level.buckets || []).forEach(function (b) {
        b.tasks.forEach(function (task) {
          tasks.append(html("li", { class: "tw-task", "data-task": short(task[1]) },
            KV.t("tw_task", { task: short(task[1]), due: task[2], slot: b.slot, bucket: b.expiration_ms })));
        });
      });
      if (!tasks.children.length) tasks.append(html("li", { class: "tw-empty" }, KV.t("tw_no_tasks")));
      box.append(tasks);
      rings.append(box);
    });
    const queue = [];
    (t.levels || []).forEach(function (level) {
      (level.buckets || []).forEach(function (b) { queue.push({ level: level.level, slot: b.slot, ms: b.expiration_ms, n: b.tasks.length }); });
    });
    queue.sort(function (a, b) { return a.ms - b.ms; });
    const dq = html("div", { class: "tw-queue", id: "tw-queue" });
    dq.append(html("h3", {}, KV.t("tw_queue_title")));
    const ol = html("ol", { class: "stage-fit", tabindex: "0", "aria-label": KV.t("tw_queue_title") });
    queue.forEach(function (q) { ol.append(html("li", {}, KV.t("tw_queue_item", q))); });
    dq.append(queue.length ? ol : html("p", { class: "tw-empty" }, KV.t("tw_queue_empty")));
    const mv = html("div", { class: "tw-moves", id: "tw-moves" });
    mv.append(html("h3", {}, KV.t("tw_moves_title")));
    const ul = html("ul", { class: "stage-fit", tabindex: "0", "aria-label": KV.t("tw_moves_title") });
    fm.moves.forEach(function (m) { ul.append(html("li", { class: m.cls }, m.text)); });
    mv.append(fm.moves.length ? ul : html("p", { class: "tw-empty" }, KV.t("tw_no_moves")));
    const side = html("div", { class: "tw-side" });
    side.append(dq, mv);
    parts.push(rings, side);
    element.replaceChildren.apply(element, parts);
  }

  KV.register("timing-wheel", {
    update(element, frame) {
      element._twFrame = frame;
      draw(element, frame, true);
      // A window that turns into a phone's (or back) redraws its rings at once.
      if (!element._twWatch && PHONE.addEventListener) {
        element._twWatch = true;
        PHONE.addEventListener("change", function () { if (element._twFrame) { draw(element, element._twFrame, false); KV.fitStage(); } });
      }
    },
  });
})();
