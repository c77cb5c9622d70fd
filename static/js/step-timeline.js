/* Steps and timeline: every engine event as text, grouped under the step that caused
 * it (the screen-reader alternative to the diagrams), the scenario form kept in line
 * with the engine's run. A step back restores the run; events after state.run.last_seq
 * are dropped here, so the timeline always matches the engine. */
(function () {
  "use strict";
  const FOLD = { checkpoint_written: true };
  const kept = { runId: null, events: new Map() };
  const $ = function (id) { return document.getElementById(id); };

  function syncForm(st) {
    const sel = $("scenario-select");
    if (sel && st.scenario && sel.value !== st.scenario.name) sel.value = st.scenario.name;
    const radio = $("trunc-" + st.truncation);
    if (radio && !radio.checked) radio.checked = true;
  }

  function eventItem(ev) {
    const li = KV.html("li", { class: "tl-item tl-" + ev.kind, "data-seq": ev.seq });
    li.append(KV.html("span", { class: "tl-time" }, KV.secs(ev.time_ms, 3)), " ",
      KV.html("span", { class: "tl-text" }, ev.text));
    return li;
  }

  function render(container, st) {
    const run = st.run || {};
    const seqs = run.step_seqs || [0];
    const groups = seqs.map(function () { return []; });
    Array.from(kept.events.values()).sort(function (a, b) { return a.seq - b.seq; }).forEach(function (ev) {
      let i = 0;
      while (i < seqs.length - 1 && ev.seq > seqs[i]) i++;
      groups[i].push(ev);
    });
    const frag = document.createDocumentFragment();
    for (let i = groups.length - 1; i >= 0; i--) {
      const sec = KV.html("section", { class: "st-step" + (i === run.step ? " current" : ""), "data-step": i });
      const info = i > 0 ? (run.steps || [])[i - 1] : null;
      sec.append(KV.html("h3", { "data-here": KV.t("st_here") }, i === 0 ? KV.t("start") : KV.t("step_of", { step: i, total: run.total }) + KV.t("colon") + (info ? info.label : "")));
      const ol = KV.html("ol", { class: "timeline st-events" });
      let folded = 0;
      groups[i].forEach(function (ev) { if (FOLD[ev.kind]) folded++; else ol.append(eventItem(ev)); });
      if (folded) ol.append(KV.html("li", { class: "tl-item tl-note" }, KV.t("st_folded", { n: folded })));
      if (!ol.children.length) ol.append(KV.html("li", { class: "tl-item tl-note" }, KV.t("nothing_happened")));
      sec.append(ol);
      frag.append(sec);
    }
    container.replaceChildren(frag);
  }

  KV.register("step-timeline", {
    update: function (container, frame) {
      const st = frame.state || {};
      const run = st.run || {};
      let rewound = false, loaded = !!(frame.snapshot || frame.reset);
      if (kept.runId !== st.run_id || frame.reset) { kept.events.clear(); kept.runId = st.run_id; }
      (frame.events || []).forEach(function (ev) {
        if (ev.kind === "run_moved") {
          if (ev.how === "back") rewound = true;
          if (ev.how === "load") loaded = true;
          // After the rule switch, arrow keys on the radio would switch it back (and restart
          // again): hand the focus to Step, where → means step.
          const active = document.activeElement;
          if (ev.how === "load" && active && active.type === "radio" && active.closest("#load-form")) {
            const btn = $("step-button");
            if (btn) btn.focus();
          }
          return;
        }
        kept.events.set(ev.seq, ev);
      });
      kept.events.forEach(function (ev, seq) { if (seq > run.last_seq) kept.events.delete(seq); });
      if (loaded) syncForm(st);
      render(container, st);
      if (!frame.snapshot && (frame.events || []).length && KV.announce) {
        const cur = (run.steps || [])[run.step - 1];
        if (rewound) KV.announce(KV.t("back_to", { step: run.step }));
        else if (cur) KV.announce(KV.t("step_of", { step: run.step, total: run.total }) + KV.t("colon") + cur.label + KV.t("full_stop") + " " + (run.happened || []).join(KV.t("full_stop") + " "));
      }
    },
  });
})();
