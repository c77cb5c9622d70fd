/* Predict, then watch: before a guided step the lesson asks "what will happen?"
 * (state.prediction.upcoming); the learner picks an answer and locks it in (which also
 * presses Step), or just presses Step. After the step, state.prediction.outcome says
 * which choices the engine's events made happen -- decided on the server by the lesson's
 * checks, never here -- and the sentences of the events that decided it.
 * The pick is the learner's, not the engine's: it stays in this tab (sessionStorage),
 * per lesson and question, so Back and Step again show the same comparison. */
(function () {
  "use strict";
  const KV = window.KV;
  const $ = function (id) { return document.getElementById(id); };
  let asked = null;            // the upcoming question on screen (its id), kept while it stays
  let told = null;             // the outcome on screen ("id@step"), announced once

  function storeKey(id) { return "kafkaviz:predict:" + (KV.data.slug || location.pathname) + ":" + id; }
  function loadPick(id) {
    try {
      const v = window.sessionStorage.getItem(storeKey(id));
      return v === null ? null : Number(v);
    } catch (_) { return null; }
  }
  function savePick(id, i) {
    try { window.sessionStorage.setItem(storeKey(id), String(i)); } catch (_) { /* private mode */ }
  }

  function renderAsk(up) {
    const form = $("predict-form");
    if (!form) return;
    form.hidden = !up;
    if (!up) { asked = null; return; }
    if (asked === up.id) return;          // keep the learner's focus and selection
    asked = up.id;
    $("predict-question").textContent = up.question;
    const picked = loadPick(up.id);
    const box = $("predict-choices");
    box.replaceChildren();
    up.choices.forEach(function (c, i) {
      const input = KV.html("input", { type: "radio", name: "predict", value: String(i), id: "predict-choice-" + i });
      if (picked === i) input.checked = true;
      box.append(KV.tree("label", { class: "check", for: "predict-choice-" + i }, [input, document.createTextNode(" " + c.text)]));
    });
    $("predict-msg").textContent = "";
    // Play walks the steps by itself: it stops where the lesson asks, so the question is seen.
    const play = $("play-button");
    if (play && play.getAttribute("aria-pressed") === "true" && picked === null && KV.stepper) {
      KV.stepper.setPlaying(false);
      $("predict-msg").textContent = KV.t("predict_paused");
    }
  }

  function renderOutcome(oc, total) {
    const out = $("predict-outcome");
    if (!out) return;
    out.hidden = !oc;
    if (!oc) { told = null; out.replaceChildren(); return; }
    const picked = loadPick(oc.id);
    const happened = oc.choices.filter(function (c) { return c.happened; }).map(function (c) { return c.text; });
    const mine = picked !== null && oc.choices[picked] ? oc.choices[picked] : null;
    const you = mine
      ? KV.tree("p", { class: "pv-you " + (mine.happened ? "right" : "wrong") }, [
          KV.html("strong", {}, (mine.happened ? "✓ " : "✗ ") + KV.t("predict_you")), document.createTextNode(" " + mine.text + " "),
          KV.html("span", { class: "pv-mark" }, mine.happened ? KV.t("predict_right") : KV.t("predict_wrong"))])
      : KV.tree("p", { class: "pv-you skipped" }, [KV.html("strong", {}, KV.t("predict_skipped"))]);
    const engine = KV.tree("p", { class: "pv-engine" }, [
      KV.html("strong", {}, KV.t("predict_engine")),
      document.createTextNode(" " + (happened.length ? happened.join(" · ") : KV.t("predict_nothing")))]);
    const evidence = KV.tree("ul", { class: "pv-evidence" }, (oc.evidence || []).map(function (t) { return KV.html("li", {}, t); })
      .concat(oc.more_evidence ? [KV.html("li", { class: "note" }, KV.t("predict_more", { n: oc.more_evidence }))] : []));
    out.replaceChildren(
      KV.html("p", { class: "pv-question" }, KV.t("step_of", { step: oc.step, total: total || oc.step }) + " — " + oc.question),
      you, engine,
      (oc.evidence || []).length ? KV.html("p", { class: "pv-evidence-title" }, KV.t("predict_evidence")) : null,
      (oc.evidence || []).length ? evidence : null);
    const seen = oc.id + "@" + oc.step;
    if (told !== seen) {
      told = seen;
      const ann = $("announcer");
      if (ann) ann.textContent = (mine ? (mine.happened ? "✓ " : "✗ ") + KV.t("predict_you") + " " + mine.text + ". " : "") +
        KV.t("predict_engine") + " " + (happened.length ? happened.join(" · ") : KV.t("predict_nothing"));
    }
  }

  KV.register("predict", {
    update: function (el, frame) {
      const p = (frame.state || {}).prediction || null;
      el.hidden = !p;
      renderOutcome(p && p.outcome, ((frame.state || {}).run || {}).total);
      renderAsk(p && p.upcoming);
    },
  });

  document.addEventListener("submit", function (e) {
    if (!e.target || e.target.id !== "predict-form") return;
    e.preventDefault();
    const picked = e.target.querySelector('input[name="predict"]:checked');
    const msg = $("predict-msg");
    if (!picked) { msg.textContent = KV.t("predict_pick_first"); return; }
    if (asked === null) return;
    savePick(asked, Number(picked.value));
    const step = $("step-button");
    if (step && step.getAttribute("aria-disabled") !== "true") {
      msg.textContent = "";
      step.click();
    } else {
      msg.textContent = KV.t("predict_locked");     // a watcher of a room: the instructor steps
    }
  }, true);
})();
