/* The lesson's quiz: answers are checked here (they are part of the lesson's data, not
 * a secret), and each explanation points at a live diagram element, which is outlined
 * and scrolled into view. */
(function () {
  "use strict";
  const KV = window.KV;

  function point(id) {
    document.querySelectorAll(".kv-pointed").forEach(function (n) { n.classList.remove("kv-pointed"); });
    const target = id && document.getElementById(id);
    if (!target) return;
    target.classList.add("kv-pointed");
    target.scrollIntoView({ block: "center", behavior: KV.reducedMotion() ? "auto" : "smooth" });
  }

  function answer(form, scroll) {
    const q = (KV.data.quiz || []).find(function (x) { return x.id === form.dataset.quiz; });
    const picked = form.querySelector('input[name="answer"]:checked');
    const out = form.querySelector(".quiz-feedback");
    if (!q || !out) return;
    if (!picked) { out.textContent = ""; return; }
    KV.progress.save(function (p) { p.quiz[q.id] = Number(picked.value); });
    const right = Number(picked.value) === q.answer;
    form.classList.toggle("right", right);
    form.classList.toggle("wrong", !right);
    out.replaceChildren(
      KV.html("strong", {}, right ? KV.t("correct") : KV.t("wrong")), " ", q.explain,
      q.points_at ? KV.html("span", { class: "note" }, " " + KV.t("look_at")) : "");
    if (scroll) point(q.points_at);
  }

  document.addEventListener("submit", function (e) {
    const form = e.target.closest && e.target.closest("form[data-quiz]");
    if (!form) return;
    e.preventDefault();
    answer(form, true);
  }, true);

  // Answers given in an earlier visit come back (without scrolling the page to them).
  document.addEventListener("DOMContentLoaded", function () {
    const saved = KV.progress.load().quiz || {};
    document.querySelectorAll("form[data-quiz]").forEach(function (form) {
      const choice = saved[form.dataset.quiz];
      const input = choice === undefined ? null : form.querySelector('input[name="answer"][value="' + choice + '"]');
      if (input) { input.checked = true; answer(form, false); }
    });
  });
})();
