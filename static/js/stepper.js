/* The guided-steps controls every lesson with a sandbox shares: back, play/pause, step,
 * speed, the scrubber (any step), reset, the narration of the current step (the
 * lesson's intro sentence, then what the engine did, generated from its events), and
 * the keyboard shortcuts (listed on the "?" overlay). Buttons declare their key with
 * aria-keyshortcuts; this file presses them (never on a room's page watched without control:
 * see watching()). */
(function () {
  "use strict";

  const KV = window.KV;
  const $ = function (id) { return document.getElementById(id); };
  // A label made into a sentence: the page language's full stop, unless it ends in one already.
  function sentence(text) { return /[.!?。！？]$/.test(text) ? text : text + KV.t("full_stop"); }
  const SPEEDS = [0.25, 0.5, 1, 2, 4, 8];
  const BASE_MS = 1600;        // one step per 1.6 s at 1×
  // null until the first frame says where the run is: Play pressed before it came (a loaded
  // machine, a slow socket) waits for it instead of taking step 0 of 0 for the end.
  let run = null;
  let playing = null, sentAt = -1;
  let openedAtEnd = false;

  function press(id) {
    const btn = $(id);
    if (!btn || btn.getAttribute("aria-disabled") === "true") return false;
    btn.click();
    return true;
  }

  function seek(n) {
    const range = $("scrubber");
    if (!range) return;
    range.value = String(Math.max(0, Math.min(run ? run.total : 0, n)));
    range.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function setPlaying(on) {
    const btn = $("play-button");
    if (playing) { window.clearInterval(playing); playing = null; }
    if (on) {
      const speed = Number(($("speed") || {}).value || 1);
      sentAt = -1;
      playing = window.setInterval(tick, BASE_MS / speed);
      tick();
    }
    if (btn) {
      btn.setAttribute("aria-pressed", on ? "true" : "false");
      btn.querySelector(".play-icon").textContent = on ? "❚❚" : "▶";
      btn.querySelector(".play-text").textContent = on ? KV.t("pause") : KV.t("play");
    }
  }
  function tick() {
    if (!run) return;
    if (run.step >= run.total) { setPlaying(false); return; }
    if (sentAt === run.step) return;     // the previous step's frame has not come back yet
    sentAt = run.step;
    press("step-button");
  }

  function li(text, cls) { return KV.html("li", { class: cls || "" }, text); }

  function update(frame) {
    const st = (frame.state || {}).run;
    if (!st) return;
    run = st;
    const counter = $("step-counter");
    if (counter) counter.textContent = st.step === 0 ? KV.t("start") + " · 0/" + st.total : KV.t("step_of", { step: st.step, total: st.total });
    const range = $("scrubber");
    if (range) {
      range.max = String(st.total);
      if (document.activeElement !== range || frame.snapshot) range.value = String(st.step);
      range.setAttribute("aria-valuetext", counter ? counter.textContent : String(st.step));
    }
    // A real client attached to the sandbox's listener: its requests are not in the run.
    const attached = (((frame.state || {}).client_port || {}).connections || []).length > 0;
    KV.setDisabled($("back-button"), st.step === 0 || attached, attached ? KV.t("client_attached") : KV.t("at_start"));
    KV.setDisabled($("step-button"), st.step >= st.total, KV.t("at_end"));
    const cur = st.step > 0 ? st.steps[st.step - 1] : null;
    const say = $("step-say");
    // A new step's sentence is read from its start ("Step n of N — ..."), even where the
    // narration is a scroll box the learner scrolled down in to finish the last one.
    const box0 = $("narration");
    if (box0 && say && say.dataset.step !== String(st.step)) { box0.scrollTop = 0; say.dataset.step = String(st.step); }
    if (say) {
      say.textContent = cur ? KV.t("step_of", { step: st.step, total: st.total }) + " — " +
        (cur.say || sentence(cur.scripted ? cur.label : KV.t("your_command") + ": " + cur.label)) : "";
    }
    const box = $("step-happened-box"), list = $("step-happened");
    if (list) {
      list.replaceChildren();
      (st.happened || []).forEach(function (t) { list.append(li(t)); });
      if (cur && !(st.happened || []).length) list.append(li(KV.t("nothing_happened"), "note"));
      if (box) box.hidden = !cur;
    }
    const next = $("next-step");
    if (next) {
      const n = st.steps[st.step];
      // A page that opens at the run's end (a lesson finished earlier, or the other language's
      // page: the run is kept) says where the learner reads why Step is off, not only in its
      // title. A learner who steps to the end saw it come: no line is added under the picture.
      if (frame.snapshot || frame.reset) openedAtEnd = !n && st.total > 0 && st.step >= st.total;
      else if (n) openedAtEnd = false;
      const ended = openedAtEnd && !n;
      next.classList.toggle("run-end", ended);
      if (ended) {
        // A phone has room for the short line only (a stage whose picture cannot shrink further, lesson 15's rings).
        next.replaceChildren(KV.html("span", { class: "run-end-long" }, KV.t("run_end_hint")),
          KV.html("span", { class: "run-end-short" }, KV.t("run_end_short")));
      } else next.textContent = n ? "→ " + KV.t("next") + ": " + (n.say || n.label) : "";
    }
    if (st.step >= st.total && playing) setPlaying(false);
  }
  // Runs: a share link opened, an export downloaded, a file imported.
  let sharedSent = false;
  function openShared(frame) {
    const id = KV.data.shared_run;
    const form = $("open_shared-form");
    if (!id || sharedSent || !form || !frame.snapshot) return;
    sharedSent = true;
    $("open-shared-id").value = id;
    form.requestSubmit();
  }
  KV.onAck = KV.onAck || {};
  KV.onAck.share = function (msg) {
    const box = $("share-link-box"), input = $("share-link");
    if (!box || !input) return;
    const url = new URL(window.location.href);
    url.search = "?run=" + encodeURIComponent(msg.share_id) + (KV.data.lang && KV.data.lang !== "en" ? "&lang=" + KV.data.lang : "");
    input.value = url.toString();
    const fork = $("fork-link");
    if (fork) fork.href = "/sandbox/?run=" + encodeURIComponent(msg.share_id) + (KV.data.lang && KV.data.lang !== "en" ? "&lang=" + KV.data.lang : "");
    box.hidden = false;
    input.focus();
    input.select();
  };
  KV.onAck.export = function (msg) {
    const blob = new Blob([msg.file], { type: "application/json" });   // the server's text: exact 64-bit numbers
    const a = KV.html("a", { href: URL.createObjectURL(blob), download: "kafkaviz-" + (KV.data.slug || "run") + "-step-" + msg.data.run.step + ".json" });
    document.body.append(a);
    a.click();
    window.setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  };
  // Drawn like any diagram (live.js's one dispatch), from <span data-diagram="stepper"> on the stage.
  KV.register("stepper", { update: function (_el, frame) { update(frame); openShared(frame); } });
  KV.stepper = { seek: seek, setPlaying: setPlaying };

  // A room's student without control (#room-banner[data-control="watching"], set by room.js)
  // may not change the room's cluster: the server refuses it ("forbidden"). So the shortcuts
  // that would send a command do nothing, and the "?" list hides them, until control is given.
  function watching() {
    const banner = $("room-banner");
    return !!banner && banner.dataset.control === "watching";
  }

  function toggleKeys() {
    const d = $("keys-dialog");
    if (!d) return;
    if (d.open) d.close(); else d.showModal();
  }

  document.addEventListener("DOMContentLoaded", function () {
    const play = $("play-button");
    if (play) play.addEventListener("click", function () { setPlaying(!playing); });
    const speed = $("speed");
    if (speed) speed.addEventListener("change", function () { if (playing) setPlaying(true); });
    const file = $("import-file");
    if (file) file.addEventListener("change", function () {
      const f = file.files && file.files[0];
      if (!f) return;
      const max = KV.data.max_run_bytes;
      if (f.size > max) { $("import-error").textContent = KV.t("sp_too_big", { name: f.name, kb: Math.floor(max / 1024) }); return; }
      f.text().then(function (text) { $("import-run").value = text; $("import-form").requestSubmit(); file.value = ""; });
    });
    const keys = $("keys-button");
    if (keys) keys.addEventListener("click", toggleKeys);
    // A learner's click on Back or the scrubber stops playback.
    ["back-button", "scrubber", "reset-button"].forEach(function (id) {
      const n = $(id);
      if (n) n.addEventListener(id === "scrubber" ? "input" : "click", function () { setPlaying(false); });
    });
  });

  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey || KV.typing(e.target)) return;
    const d = $("keys-dialog");
    if (e.key === "?") { e.preventDefault(); toggleKeys(); return; }
    if (d && d.open) return;
    // Only the speed (which sends nothing) is left to a watcher; Space, arrows and the rest scroll as usual.
    if (watching() && e.key !== "+" && e.key !== "-" && e.key !== "=") return;
    if (e.target && e.target.type === "range" && ["ArrowLeft", "ArrowRight", "Home", "End"].indexOf(e.key) >= 0) return;
    if (e.target && e.target.type === "radio" && (e.key.indexOf("Arrow") === 0 || e.key === " ")) return;
    let handled = true;
    if (e.key === " " && !(e.target && (e.target.tagName === "BUTTON" || e.target.tagName === "A"))) setPlaying(!playing);
    else if (e.key === "Home") { setPlaying(false); seek(0); }
    else if (e.key === "End" && run) seek(run.total);
    else if (e.key === "+" || e.key === "-" || e.key === "=") {
      const sel = $("speed");
      if (sel) {
        const i = SPEEDS.indexOf(Number(sel.value)) + (e.key === "-" ? -1 : 1);
        sel.value = String(SPEEDS[Math.max(0, Math.min(SPEEDS.length - 1, i))]);
        sel.dispatchEvent(new Event("change", { bubbles: true }));
      }
    } else {
      if (e.repeat) return;
      const name = e.key === " " ? null : (e.shiftKey && e.key.length === 1 ? "Shift+" + e.key.toUpperCase() : e.key);
      const target = name && document.querySelector('[aria-keyshortcuts~="' + CSS.escape(name) + '"]');
      if (target && target.tagName === "BUTTON") { if (target.getAttribute("aria-disabled") !== "true") target.click(); }
      else handled = false;
    }
    if (handled) e.preventDefault();
  });
})();
