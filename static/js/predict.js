/* Predict, then watch: before a guided step the lesson asks "what will happen?"
 * (state.prediction.upcoming); the learner picks an answer and locks it in (which also
 * presses Step), or just presses Step. After the step, state.prediction.outcome says
 * which choices the engine's events made happen -- decided on the server by the lesson's
 * checks, never here -- and the sentences of the events that decided it.
 * The pick is the learner's, not the engine's: it stays in this tab (sessionStorage),
 * per lesson and question, so Back and Step again show the same comparison.
 * In a room a student's pick also goes to the server ({"type": "predict"}), which
 * sends every watcher the class's spread ({"type": "spread"}): the instructor's
 * projector shows it as it comes in, students see it beside the engine's answer. */
(function () {
  "use strict";
  const KV = window.KV;
  const $ = function (id) { return document.getElementById(id); };
  let asked = null;            // the upcoming question on screen (its id), kept while it stays
  let told = null;             // the outcome on screen ("id@step"), announced once
  let current = null;          // the last frame's state.prediction
  const spreads = {};          // a room's class answers: question id -> students per choice
  let role = "";               // "", or in a room "student" / "instructor" (room-data)
  document.addEventListener("DOMContentLoaded", function () {
    const node = $("room-data");
    try { role = node ? JSON.parse(node.textContent).role || "" : ""; } catch (_) { role = ""; }
  });

  function fill(node, children) { node.replaceChildren.apply(node, children.filter(Boolean)); }

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
    form.hidden = !up || role === "instructor";      // the class predicts; the projector shows the spread
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
    const you = role === "instructor" ? null : mine
      ? KV.tree("p", { class: "pv-you " + (mine.happened ? "right" : "wrong") }, [
          KV.html("strong", {}, (mine.happened ? "✓ " : "✗ ") + KV.t("predict_you")), document.createTextNode(" " + mine.text + " "),
          KV.html("span", { class: "pv-mark" }, mine.happened ? KV.t("predict_right") : KV.t("predict_wrong"))])
      : KV.tree("p", { class: "pv-you skipped" }, [KV.html("strong", {}, KV.t("predict_skipped"))]);
    const engine = KV.tree("p", { class: "pv-engine" }, [
      KV.html("strong", {}, KV.t("predict_engine")),
      document.createTextNode(" " + (happened.length ? happened.join(" · ") : KV.t("predict_nothing")))]);
    const evidence = KV.tree("ul", { class: "pv-evidence" }, (oc.evidence || []).map(function (t) { return KV.html("li", {}, t); })
      .concat(oc.more_evidence ? [KV.html("li", { class: "note" }, KV.t("predict_more", { n: oc.more_evidence }))] : []));
    fill(out, [
      KV.html("p", { class: "pv-question" }, KV.t("step_of", { step: oc.step, total: total || oc.step }) + " — " + oc.question),
      you, engine,
      (oc.evidence || []).length ? KV.html("p", { class: "pv-evidence-title" }, KV.t("predict_evidence")) : null,
      (oc.evidence || []).length ? evidence : null]);
    const seen = oc.id + "@" + oc.step;
    if (told !== seen) {
      told = seen;
      const ann = $("announcer");
      if (ann) ann.textContent = (mine ? (mine.happened ? "✓ " : "✗ ") + KV.t("predict_you") + " " + mine.text + ". " : "") +
        KV.t("predict_engine") + " " + (happened.length ? happened.join(" · ") : KV.t("predict_nothing"));
    }
  }

  // The class's answers (rooms): on the projector while they come in, for everybody after the step.
  function renderSpread() {
    const box = $("predict-spread");
    if (!box) return;
    const oc = current && current.outcome, up = current && current.upcoming;
    const q = oc || (role === "instructor" ? up : null);
    if (!q || !role) { box.hidden = true; box.replaceChildren(); return; }
    const counts = spreads[q.id] || q.choices.map(function () { return 0; });
    const total = counts.reduce(function (a, b) { return a + b; }, 0);
    if (oc && !total) { box.hidden = true; box.replaceChildren(); return; }
    box.hidden = false;
    const items = q.choices.map(function (c, i) {
      const n = counts[i] || 0;
      const mark = oc ? (c.happened ? "✓ " : "✗ ") : "";
      const share = KV.t("predict_count", { n: n, pct: total ? Math.round(100 * n / total) : 0 });
      return KV.tree("li", { class: "pv-spread-row" + (oc ? (c.happened ? " right" : " wrong") : "") }, [
        KV.html("span", { class: "pv-spread-text" }, mark + c.text),
        KV.html("span", { class: "pv-spread-count" }, share),
        KV.html("meter", { min: "0", max: String(Math.max(total, 1)), value: String(n), "aria-hidden": "true" })]);
    });
    fill(box, [
      !oc ? KV.html("p", { class: "pv-question pv-asked" }, up.question) : null,
      KV.html("p", { class: "pv-spread-title" }, KV.t("predict_class", { n: total })),
      KV.tree("ul", { class: "pv-spread" }, items),
      !oc ? KV.html("p", { class: "note" }, KV.t("predict_class_waits")) : null]);
  }

  KV.register("predict", {
    update: function (el, frame) {
      const p = (frame.state || {}).prediction || null;
      current = p;
      el.hidden = !p;
      renderOutcome(p && p.outcome, ((frame.state || {}).run || {}).total);
      renderAsk(p && p.upcoming);
      renderSpread();
    },
  });
  KV.on("spread", function (msg) {
    if (typeof msg.question !== "string" || !Array.isArray(msg.counts)) return;
    spreads[msg.question] = msg.counts;
    renderSpread();
  });

  document.addEventListener("submit", function (e) {
    if (!e.target || e.target.id !== "predict-form") return;
    e.preventDefault();
    const picked = e.target.querySelector('input[name="predict"]:checked');
    const msg = $("predict-msg");
    if (!picked) { msg.textContent = KV.t("predict_pick_first"); return; }
    if (asked === null) return;
    savePick(asked, Number(picked.value));
    if (role === "student" && KV.socket) KV.socket.send(JSON.stringify({ type: "predict", question: asked, choice: Number(picked.value) }));
    const step = $("step-button");
    // In a room the class answers and the room steps when its driver says so: a student's
    // lock-in never steps the room for everybody, even with control.
    if (step && role !== "student" && step.getAttribute("aria-disabled") !== "true") {
      msg.textContent = "";
      step.click();
      step.focus();                      // the form hides: keep the keyboard where the run goes on
    } else {
      msg.textContent = KV.t("predict_locked");
    }
  }, true);
})();
