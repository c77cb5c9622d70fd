/* kafkaviz live glue: takes the JSON messages of the lesson WebSocket (opened by
 * htmx's ws extension) and hands frames to the diagram modules registered with
 * KV.register(name, {update(el, frame)}). Elements opt in with data-diagram="name".
 * Error replies go next to the form that sent the command; acks to a status line. */
(function () {
  "use strict";
  const KV = window.KV;
  KV.lastFrame = null;
  // Virtual time as the page shows it: seconds since the run's origin. Every engine run starts
  // its clock at 0 except lesson 16's, which replays a client session recorded at wall-clock
  // time (its state names that start, time_origin_ms): "1795702382.4 s" told a learner nothing.
  KV.timeOrigin = 0;
  KV.secs = function (ms, digits) { return ((ms - KV.timeOrigin) / 1000).toFixed(digits) + " s"; };
  const $ = function (id) { return document.getElementById(id); };

  function announce(text) {
    const node = $("announcer");
    if (node) { node.textContent = ""; window.setTimeout(function () { node.textContent = text; }, 30); }
  }
  KV.announce = announce;

  function setConn(state, text) {
    const node = $("conn-status");
    if (node) { node.dataset.state = state; node.textContent = text; }
  }

  function clearErrors(form) {
    const scope = form || document;
    scope.querySelectorAll(".form-error").forEach(function (p) { p.textContent = ""; });
    scope.querySelectorAll("[aria-invalid]").forEach(function (i) {
      i.removeAttribute("aria-invalid"); i.removeAttribute("aria-describedby");
    });
    ["general-error", "step-error"].forEach(function (id) { const g = $(id); if (g) g.textContent = ""; });
  }

  function showError(msg) {
    let form = msg.command ? document.querySelector('form[data-command="' + msg.command + '"]') : null;
    // Commands sent by a button without its own form (fault panel) name their slot.
    if (!form && msg.command && KV.lastSender && KV.lastSender.closest) form = KV.lastSender.closest("form");
    const slot = (form && form.querySelector(".form-error")) || (msg.command && $(msg.command + "-error")) ||
      (["step", "back", "seek"].indexOf(msg.command) >= 0 && $("step-error")) || $("general-error");
    if (slot) slot.textContent = msg.message;
    if (form && msg.field) {
      const input = form.querySelector('[name="' + msg.field + '"]');
      if (input && input.type !== "hidden") {
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-describedby", slot.id);
      }
    }
    const ack = $("ack");
    if (ack) ack.textContent = "";
  }

  function updateTasks(tasks) {
    const stored = KV.progress.load().tasks || [];
    const newly = (tasks || []).filter(function (t) { return t.done && stored.indexOf(t.id) < 0; });
    if (newly.length) KV.progress.save(function (p) { newly.forEach(function (t) { p.tasks.push(t.id); }); });
    tasks = (tasks || []).map(function (t) {
      return stored.indexOf(t.id) >= 0 ? Object.assign({}, t, { done: true, progress: "" }) : t;
    });
    const texts = {};
    (KV.data.tasks || []).forEach(function (t) { texts[t.id] = t.text; });
    (tasks || []).forEach(function (t) {
      const li = document.querySelector('[data-task="' + t.id + '"]');
      if (!li) return;
      const was = li.classList.contains("done");
      li.classList.toggle("done", !!t.done);
      li.querySelector(".task-status").textContent = t.done ? KV.t("done") : KV.t("not_yet");
      const prog = li.querySelector(".task-progress");
      if (prog) prog.textContent = t.progress && !t.done ? "(" + t.progress + ")" : "";
      if (t.done && !was && KV.lastFrame) announce(KV.t("task_done", { text: texts[t.id] || t.id }));
    });
  }

  // Back restores the engine to an earlier step, and its frame carries only the run_moved
  // marker: the diagrams get that step's own events again (fetch arrows, tokens, wheel
  // moves), from the events this page has seen, so Back shows the step, not just "rewound".
  const seen = new Map();
  let seenRun = null;
  function withStepEvents(frame) {
    const st = frame.state || {}, run = st.run, evs = frame.events || [];
    if (frame.reset || st.run_id !== seenRun) { seen.clear(); seenRun = st.run_id; }
    let back = false;
    evs.forEach(function (ev) { if (ev.kind !== "run_moved") seen.set(ev.seq, ev); else if (ev.how === "back") back = true; });
    if (!run) return frame;
    seen.forEach(function (ev, seq) { if (seq > run.last_seq) seen.delete(seq); });
    while (seen.size > 3000) seen.delete(seen.keys().next().value);
    const seqs = run.step_seqs || [];
    if (!back || !run.step || seqs[run.step] === undefined) return frame;
    const again = Array.from(seen.values()).filter(function (ev) { return ev.seq > seqs[run.step - 1] && ev.seq <= seqs[run.step]; })
      .sort(function (a, b) { return a.seq - b.seq; });
    return Object.assign({}, frame, { events: evs.concat(again), replayed: again.length });
  }

  function draw(nodes, frame) {
    nodes.forEach(function (node) {
      const mod = KV.diagrams[node.dataset.diagram];
      if (mod) {
        try { mod.update(node, frame); } catch (err) { console.error("diagram " + node.dataset.diagram, err); }
      }
    });
  }
  // The stage first (issue 17): its diagrams -- the picture a click changes and the tokens
  // that travel on it -- and the step's sentence draw at once; the diagrams below the stage
  // draw after the browser has painted that, frame by frame in order, so a click's first
  // token moves without waiting for the timeline, lanes and charts. KV.lastFrame (and the
  // frame count) are set when a frame is drawn whole.
  const below = [];
  function drawBelow() {
    while (below.length) {
      const job = below.shift(), frame = job.frame;
      draw(job.nodes, frame);
      updateTasks((frame.state || {}).tasks);
      if (!frame.replayed) (frame.events || []).forEach(function (ev) {
        if (ev.kind === "segment_rolled" || ev.kind === "segment_deleted") announce(ev.text);
      });
      KV.lastFrame = frame;
      document.body.dataset.frames = String(Number(document.body.dataset.frames || 0) + 1);
    }
  }

  // Frames the server cut inside one command (mode "step": each engine phase of a long
  // clock jump) are played one at a time so each phase is seen: the first at once (a click
  // never waits for a timer), the rest -- and the live frame that closes the command --
  // every STEP_MS. A long backlog is drawn at once; a snapshot or reset drops it.
  const STEP_MS = 150, MAX_QUEUED = 20;
  const stepQueue = [];
  let stepTimer = null;
  function drainStep() {
    const next = stepQueue.shift();
    if (next) onFrame(next, true);
    if (!stepQueue.length) { window.clearInterval(stepTimer); stepTimer = null; }
  }
  function catchUp() { while (stepQueue.length) onFrame(stepQueue.shift(), true); }

  // The frame protocol (docs/web.md, "Frame shape"): a frame carries the whole state
  // ("full": true) or a diff against the last whole state ("base" = its frame_seq).
  // resolve() gives every frame its whole "state" before diagrams see it; frames the
  // snapshot already covers are dropped; a diff whose base we missed asks for a snapshot.
  // A frame also names its generation ("gen"): the build of the sandbox that numbered it.
  // When the process that ran the sandbox dies, another rebuilds it and numbers its frames
  // from 1 again under a new generation: the page takes that generation's first whole
  // state as a snapshot (or asks for one) instead of dropping everything numbered below
  // the last frame it saw. Frames of a generation already replaced are stragglers: dropped.
  let base = null, baseSeq = null, lastSeq = -1, syncing = false, gen = null;
  const retired = {};
  function askSync() {
    if (!syncing && KV.socket) { syncing = true; KV.socket.send(JSON.stringify({type: "sync"})); }
  }
  function applyDiff(value, diff) {
    const out = Array.isArray(value) ? value.slice(0, diff.n) : Object.assign({}, value);
    if (Array.isArray(value)) while (out.length < diff.n) out.push(null);
    (diff.d || []).forEach(function (k) { delete out[k]; });
    Object.keys(diff.s || {}).forEach(function (k) { out[k] = diff.s[k]; });
    Object.keys(diff.p || {}).forEach(function (k) { out[k] = applyDiff(out[k], diff.p[k]); });
    return out;
  }
  function resolve(frame) {
    if (frame.gen !== undefined && frame.gen !== gen) {
      if (retired[frame.gen] && !frame.snapshot) return false;    // a snapshot is the server's truth
      delete retired[frame.gen];
      if (gen !== null && frame.full === false) { askSync(); return false; }
      if (gen !== null) { retired[gen] = true; frame.snapshot = true; }
      gen = frame.gen; base = null; baseSeq = null;
      KV.generation = gen;
    }
    if (frame.snapshot) lastSeq = -1;
    if (frame.frame_seq <= lastSeq) return false;
    if (frame.full !== false) {
      base = frame.state; baseSeq = frame.frame_seq; syncing = false;
    } else if (frame.base === baseSeq && base) {
      frame.state = applyDiff(base, frame.diff);
    } else {
      askSync();
      return false;
    }
    lastSeq = frame.frame_seq;
    return true;
  }

  // A socket refused when it opened ("refused": the address's quota, a full server, a
  // member's tabs): the page says why next to the step buttons and disables them. The
  // server closes such a socket with 1013, so htmx reconnects by itself with a growing
  // delay; the snapshot of a later accepted connection re-enables them.
  const CONTROLS = "#controls button, form[ws-send] button, form[ws-send] input, form[ws-send] select";
  function refuse(msg) {
    document.body.dataset.refused = msg.code;
    document.querySelectorAll(CONTROLS).forEach(function (node) {
      if (!node.disabled) { node.disabled = true; node.dataset.refusedOff = "1"; }
    });
    const slot = $("step-error");
    if (slot) slot.textContent = msg.message;
    setConn("refused", msg.message);
  }
  function unrefuse() {
    if (!document.body.dataset.refused) return;
    delete document.body.dataset.refused;
    document.querySelectorAll("[data-refused-off]").forEach(function (node) {
      node.disabled = false; delete node.dataset.refusedOff;
    });
    const slot = $("step-error");
    if (slot) slot.textContent = "";
    setConn("open", KV.t("connected"));
  }

  // What reached this page over the socket (the burst test and bench read it): frames,
  // the events they carried, and the events the server folded into "skipped".
  KV.received = { frames: 0, events: 0, skipped: 0, maxEvents: 0 };
  // The one handler of a frame: resolved to its whole state, queued while cut frames play,
  // then drawn by every [data-diagram] element's module (the step controls too: stepper.js
  // registers "stepper"). ``queued``: a frame already resolved, played from the queue.
  function onFrame(msg, queued) {
    if (!queued) {
      const n = (msg.events || []).length, r = KV.received;
      r.frames += 1; r.events += n; r.skipped += msg.skipped || 0; r.maxEvents = Math.max(r.maxEvents, n);
      if (msg.snapshot) unrefuse();
      if (!resolve(msg)) return;
      if (msg.snapshot || msg.reset) stepQueue.length = 0;
      else if (stepTimer) {
        stepQueue.push(msg);
        if (stepQueue.length > MAX_QUEUED) catchUp();
        return;
      } else if (msg.mode === "step") stepTimer = window.setInterval(drainStep, KV.reducedMotion() ? 0 : STEP_MS);
    }
    const frame = withStepEvents(msg), state = frame.state || {};
    KV.timeOrigin = typeof state.time_origin_ms === "number" ? state.time_origin_ms : 0;
    const clock = $("clock");
    if (clock && typeof state.clock_ms === "number") clock.textContent = KV.secs(state.clock_ms, 1);
    const nodes = Array.prototype.slice.call(document.querySelectorAll("[data-diagram]")), stage = $("stage");
    const onStage = function (n) { return !stage || stage.contains(n); };
    nodes.forEach(function (node) {
      const mod = onStage(node) && KV.diagrams[node.dataset.diagram];
      if (mod) {
        try { mod.update(node, frame); } catch (err) { console.error("diagram " + node.dataset.diagram, err); }
      }
    });
    below.push({ frame: frame, nodes: nodes.filter(function (n) { return !onStage(n); }) });
    if (below.length === 1) {
      window.requestAnimationFrame(function () { window.setTimeout(drawBelow, 0); });
      window.setTimeout(drawBelow, 100);      // a hidden tab runs no animation frames
    }
  }
  KV.on("frame", onFrame);
  KV.on("error", function (msg) {
    showError(msg);
    if (msg.refused) refuse(msg);
  });
  KV.on("ack", function (msg) {
    // Stepping is shown by the step counter and narration; other commands get their ack.
    const ack = $("ack");
    if (ack) ack.textContent = ["step", "back", "seek"].indexOf(msg.command) >= 0 ? "" : msg.text;
    if (KV.onAck && KV.onAck[msg.command]) KV.onAck[msg.command](msg);
  });
  // The socket's listener: every message goes to the one handler registered for its type
  // (KV.on: this file's frame, error and ack; a room's roster and control; predict's spread).
  // KV.dispatch(msg) hands a message over as if the socket had sent it.
  function dispatch(msg) {
    if (msg instanceof Event) {
      const e = msg;
      try { msg = JSON.parse(e.detail.message); } catch (_) { return; } // not JSON: let htmx swap it
      e.preventDefault();
    }
    const handler = Object.prototype.hasOwnProperty.call(KV.handlers, msg.type) ? KV.handlers[msg.type] : null;
    if (handler) handler(msg);
  }
  KV.dispatch = dispatch;
  document.addEventListener("htmx:wsBeforeMessage", dispatch);

  // Tasks done in an earlier visit show as done at once (the server's sandbox may be new).
  document.addEventListener("DOMContentLoaded", function () {
    updateTasks((KV.progress.load().tasks || []).map(function (id) { return { id: id, done: true }; }));
  });

  // A form's fields leave as htmx's ws extension writes them (the server ignores its HEADERS):
  // nothing of ours stands between a click and the socket; the page only notes who sent it.
  document.addEventListener("htmx:wsAfterSend", function (e) {
    KV.lastSender = e.target;
    clearErrors(e.target.closest ? e.target.closest("form") : null);
  });
  document.addEventListener("htmx:wsOpen", function (e) {
    KV.socket = e.detail && e.detail.socketWrapper;
    if (!document.body.dataset.refused) setConn("open", KV.t("connected"));
  });
  document.addEventListener("htmx:wsClose", function () {
    if (!document.body.dataset.refused) setConn("closed", KV.t("reconnecting"));
  });
  document.addEventListener("htmx:wsError", function () { setConn("closed", KV.t("conn_error")); });
})();
