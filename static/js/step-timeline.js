/* Steps and timeline (lesson 10): the narration of the current step, the step counter
 * and buttons, the scenario form kept in line with the engine's run, the ← / → keys,
 * and every engine event as text grouped under the step that caused it (the text
 * alternative to the diagrams). A step back restores the run; events after
 * state.last_seq are dropped here, so the timeline always matches the engine. */
(function () {
  "use strict";
  const FOLD = { checkpoint_written: "checkpoint write(s)" };
  const kept = { runId: null, events: new Map() };

  function $(id) { return document.getElementById(id); }

  function setDisabled(btn, off, why) {
    if (!btn) return;
    if (off) { btn.setAttribute("aria-disabled", "true"); btn.title = why; }
    else { btn.removeAttribute("aria-disabled"); btn.removeAttribute("title"); }
  }

  function syncForm(st) {
    const sel = $("scenario-select");
    if (sel && st.scenario && sel.value !== st.scenario.name) sel.value = st.scenario.name;
    const radio = $("trunc-" + st.truncation);
    if (radio && !radio.checked) radio.checked = true;
  }

  function controls(st) {
    const counter = $("step-counter");
    if (counter) counter.textContent = "Step " + st.step + " of " + st.steps_total;
    setDisabled($("back-button"), st.step === 0, "This is the start of the run");
    setDisabled($("step-button"), st.step >= st.steps_total, "The run is at its end");
    const mode = $("mode-label");
    if (mode) mode.textContent = st.truncation_label;
    const narr = $("narration");
    if (narr) narr.textContent = (st.step === 0 ? "Step 0 — " : "Step " + st.step + " — ") + st.narration;
    const next = $("next-step");
    if (next) {
      next.textContent = st.next ? "Next: " + st.next + "." :
        (st.on_script ? "End of the scenario. Switch the truncation rule to compare." : "End of your run. Step back, or restart the scenario.");
    }
    const verdict = $("verdict");
    if (verdict) {
      const atEnd = st.step >= st.steps_total && st.step > 0;
      const lines = [];
      if (atEnd) {
        if ((st.lost || []).length) lines.push("✗ Acknowledged but lost: " + st.lost.join(", ") + ".");
        else lines.push("✓ Every acknowledged record is in the leader's log.");
        if (st.partition && st.partition.diverged) lines.push("✗ The replicas diverged: same offset, different records.");
        (st.findings || []).forEach(function (f) { lines.push("Checker: " + f); });
        if (st.expected_note) lines.push("In short: " + st.expected_note);
      }
      verdict.hidden = !lines.length;
      verdict.replaceChildren();
      verdict.className = "le-verdict" + ((st.lost || []).length || (st.partition && st.partition.diverged) ? " bad" : " good");
      lines.forEach(function (t) { const p = document.createElement("p"); p.textContent = t; verdict.append(p); });
    }
  }

  function eventItem(ev) {
    const li = document.createElement("li");
    li.className = "tl-item tl-" + ev.kind;
    li.dataset.seq = ev.seq;
    const t = document.createElement("span");
    t.className = "tl-time";
    t.textContent = (ev.time_ms / 1000).toFixed(3) + " s";
    const text = document.createElement("span");
    text.className = "tl-text";
    text.textContent = ev.text;
    li.append(t, " ", text);
    return li;
  }

  function render(container, st) {
    const seqs = st.step_seqs || [0];
    const groups = seqs.map(function () { return []; });
    const sorted = Array.from(kept.events.values()).sort(function (a, b) { return a.seq - b.seq; });
    sorted.forEach(function (ev) {
      let i = 0;
      while (i < seqs.length - 1 && ev.seq > seqs[i]) i++;
      groups[i].push(ev);
    });
    const frag = document.createDocumentFragment();
    for (let i = groups.length - 1; i >= 0; i--) {
      const sec = document.createElement("section");
      sec.className = "st-step" + (i === st.step ? " current" : "");
      sec.dataset.step = i;
      const h = document.createElement("h3");
      const info = i > 0 ? (st.steps || [])[i - 1] : null;
      h.textContent = i === 0 ? "Start: the brokers boot" : "Step " + i + ": " + (info ? info.label : "");
      sec.append(h);
      if (info) {
        const p = document.createElement("p");
        p.className = "st-narration" + (info.scripted ? "" : " yours");
        p.textContent = info.narration;
        sec.append(p);
      }
      const ol = document.createElement("ol");
      ol.className = "timeline st-events";
      const folded = {};
      groups[i].forEach(function (ev) {
        if (FOLD[ev.kind]) { folded[ev.kind] = (folded[ev.kind] || 0) + 1; return; }
        ol.append(eventItem(ev));
      });
      Object.keys(folded).forEach(function (k) {
        const li = document.createElement("li");
        li.className = "tl-item tl-note";
        li.textContent = "… and " + folded[k] + " " + FOLD[k];
        ol.append(li);
      });
      if (!ol.children.length) {
        const li = document.createElement("li");
        li.className = "tl-item tl-note";
        li.textContent = "No events: nothing happens until the clock moves.";
        ol.append(li);
      }
      sec.append(ol);
      frag.append(sec);
    }
    container.replaceChildren(frag);
  }

  KV.register("step-timeline", {
    update: function (container, frame) {
      const st = frame.state || {};
      let rewound = false, loaded = !!(frame.snapshot || frame.reset);
      if (kept.runId !== st.run_id || frame.reset) { kept.events.clear(); kept.runId = st.run_id; }
      (frame.events || []).forEach(function (ev) {
        if (ev.kind === "run_moved") {
          if (ev.how === "back") rewound = true;
          if (ev.how === "load") loaded = true;
          // After the rule switch, arrow keys on the radio would switch it back (and
          // restart again): hand the focus to Step forward, where → means step.
          const active = document.activeElement;
          if (ev.how === "load" && active && active.type === "radio" && active.closest("#load-form")) {
            const btn = $("step-button");
            if (btn) btn.focus();
          }
          return;
        }
        kept.events.set(ev.seq, ev);
      });
      // A rewind restored an earlier state: forget the events after it.
      kept.events.forEach(function (ev, seq) { if (seq > st.last_seq) kept.events.delete(seq); });
      // The form shows the person's choice; only a (re)load or a reconnect may change it,
      // never a late frame of the run being replaced.
      if (loaded) syncForm(st);
      controls(st);
      render(container, st);
      if (!frame.snapshot && (frame.events || []).length && KV.announce) {
        const cur = (st.steps || [])[st.step - 1];
        if (rewound) KV.announce("Back to step " + st.step + ".");
        else if (cur) KV.announce("Step " + st.step + ": " + cur.narration);
      }
    },
  });

  // ← / → step, unless a form field has the focus (there arrows belong to the field).
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || e.repeat) return;
    const t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return;
    const id = e.key === "ArrowRight" ? "step-button" : e.key === "ArrowLeft" ? "back-button" : null;
    const btn = id && $(id);
    if (!btn) return;
    e.preventDefault();
    btn.click();
  });
})();
