/* "Inside a segment" diagram (lessons 3 and 4).
 *
 * Draws frame.state.layout — one segment as the engine wrote it — as a table whose rows
 * are the .log's record batches in file order (byte position, offsets, size, largest
 * timestamp, a bar of the batch's share of segment.bytes). The .index and .timeindex
 * entries sit on the row of the batch they point at, so "entry → position" is the row
 * itself. Above it, the segment files as buttons (the lookup's first step chooses one).
 *
 * A lookup (frame.state.lookup, one log_lookup event; its steps worded by the engine's
 * narration in frame.state.lookup_steps) is replayed step by step: the segment choice,
 * every .timeindex probe, every .index probe (low, high, mid and the way the search
 * went), every batch the scan walked, and the answer. The steps are also an
 * ordered list (the text alternative; click a step to show it). With reduced motion the
 * replay jumps to the answer; the list still names every step. Elements are keyed by id
 * and updated in place. */
(function () {
  "use strict";
  const STEP_MS = 900;

  const h = KV.tree;
  function pad20(n) { return String(n).padStart(20, "0"); }
  function fmt(n) { return Number(n).toLocaleString("en-US"); }

  // ---- drawing ----------------------------------------------------------------
  function ensure(root) {
    if (root.querySelector(".ss")) return;
    root.appendChild(h("div", { class: "ss" }, [
      h("div", { class: "ss-files", id: "ss-files", role: "group", "aria-label": KV.t("ss_segments") }),
      h("p", { class: "ss-caption", id: "ss-caption" }),
      h("div", { class: "ss-lookup", id: "ss-lookup", hidden: "" }, [
        h("div", { class: "ss-lookup-head" }, [
          h("strong", { id: "ss-lookup-title" }),
          h("span", { class: "ss-lookup-nav" }, [
            h("button", { type: "button", class: "secondary small", id: "ss-prev", "aria-label": KV.t("ss_prev"), text: "◀" }),
            h("span", { id: "ss-stepno", class: "ss-stepno", "aria-live": "polite" }),
            h("button", { type: "button", class: "secondary small", id: "ss-next", "aria-label": KV.t("ss_next"), text: "▶" }),
            h("button", { type: "button", class: "secondary small", id: "ss-replay", text: KV.t("ss_replay") }),
          ]),
        ]),
        // On a phone: the current step (and as many before and after it as fit), not a box that scrolls.
        h("ol", { class: "ss-steps stage-fit", id: "ss-steps", "data-fit-rows": "li", "data-fit-rows-min": "1" }),
      ]),
      // On the stage of a short window the table scrolls in its own box (KV.fitStage), kept on
      // the row the lookup marks; so it is a focusable region.
      // On a phone it shows the rows the step is about instead (the lookup's marks, else the
      // newest batches) and a button to show them all.
      h("div", { class: "ss-tablewrap stage-fit", tabindex: "0", role: "region", "aria-labelledby": "ss-table-caption",
        "data-fit-rows": "#ss-rows > tr", "data-fit-rows-end": "", "data-fit-more": "" }, [
        h("table", { class: "ss-table", id: "ss-table" }, [
          h("caption", { class: "visually-hidden", id: "ss-table-caption" }),
          h("thead", {}, [h("tr", {}, [
            h("th", { scope: "col", class: "col-tindex", text: KV.t("ss_col_time") }),
            h("th", { scope: "col", class: "col-index", text: KV.t("ss_col_index") }),
            h("th", { scope: "col", class: "col-pos", text: KV.t("ss_col_pos") }),
            h("th", { scope: "col", class: "col-batch", text: KV.t("ss_col_batch") }),
          ])]),
          h("tbody", { id: "ss-rows" }),
        ]),
      ]),
    ]));
    root.querySelector("#ss-prev").addEventListener("click", function () { show(root, root._step - 1, true); });
    root.querySelector("#ss-next").addEventListener("click", function () { show(root, root._step + 1, true); });
    root.querySelector("#ss-replay").addEventListener("click", function () { play(root, 0); });
    root.querySelector("#ss-steps").addEventListener("click", function (e) {
      const li = e.target.closest("li");
      if (li) show(root, Number(li.dataset.step), true);
    });
    root.querySelector("#ss-steps").addEventListener("keydown", function (e) {
      const li = e.target.closest("li");
      if (!li || (e.key !== "Enter" && e.key !== " ")) return;
      e.preventDefault();
      e.stopPropagation();       // the page's own keys (Space = play) must not fire too
      show(root, Number(li.dataset.step), true);
    });
    root.querySelector("#ss-files").addEventListener("click", function (e) {
      const b = e.target.closest("button[data-segment]");
      if (!b) return;
      const form = document.getElementById("select-segment-form");
      if (form) { form.querySelector('[name="segment"]').value = b.dataset.segment; form.requestSubmit(); }
    });
  }

  function drawFiles(root, st) {
    const box = root.querySelector("#ss-files");
    const want = (st.segment_rows || []).map(function (s) { return "ss-file-" + s.base; });
    Array.from(box.children).forEach(function (c) { if (want.indexOf(c.id) < 0) c.remove(); });
    (st.segment_rows || []).forEach(function (s) {
      let b = document.getElementById("ss-file-" + s.base);
      if (!b) {
        b = h("button", { type: "button", class: "ss-file", id: "ss-file-" + s.base, "data-segment": s.base });
        box.appendChild(b);
      }
      b.textContent = pad20(s.base) + ".log" + (s.active ? " (" + KV.t("active") + ")" : "");
      b.setAttribute("aria-pressed", String(s.base === st.selected));
      b.title = KV.t("ss_file_title", { size: fmt(s.size), entries: s.entries, ts: s.largest_timestamp });
    });
  }

  function drawRows(root, st) {
    const lay = st.layout;
    const body = root.querySelector("#ss-rows");
    const byPos = {};
    (lay.offset_index || []).forEach(function (e, i) { byPos[e[2]] = { e: e, i: i }; });
    const byOff = {};
    (lay.time_index || []).forEach(function (e, i) { byOff[e[2]] = { e: e, i: i }; });
    const want = new Set();
    lay.batches.forEach(function (b) {
      const id = "ss-b-" + lay.base + "-" + b[0];
      want.add(id);
      let tr = document.getElementById(id);
      if (!tr) {
        tr = h("tr", { id: id, class: "ss-row" + (KV.reducedMotion() ? "" : " is-new") }, [
          h("td", { class: "col-tindex" }), h("td", { class: "col-index" }),
          h("td", { class: "col-pos" }), h("td", { class: "col-batch" }, [
            h("span", { class: "ss-bar" }), h("span", { class: "ss-batch-text" })]),
        ]);
        body.appendChild(tr);
        window.setTimeout(function () { tr.classList.remove("is-new"); }, 50);
      }
      tr.dataset.position = b[0];
      tr.dataset.first = b[1];
      tr.dataset.last = b[2];
      const cells = tr.children;
      const ie = byPos[b[0]];
      cells[1].textContent = ie ? "#" + ie.i + "  " + ie.e[0] + " → " + ie.e[2] : "";
      cells[1].title = ie ? KV.t("ss_rel_title", { rel: ie.e[0], off: ie.e[1], base: lay.base }) : "";
      tr.dataset.indexEntry = ie ? ie.i : "";
      tr.dataset.entry = ie ? ie.e[0] + " → " + ie.e[2] : "";     // as a sentence names it: '2 → 340'
      const te = byOff[b[2]];
      cells[0].textContent = te ? "#" + te.i + "  " + te.e[0] + " → " + te.e[1] : "";
      cells[0].title = te ? KV.t("ss_time_title", { ts: te.e[0], rel: te.e[1], off: te.e[2] }) : "";
      tr.dataset.timeEntry = te ? te.i : "";
      cells[2].textContent = fmt(b[0]);
      const bar = cells[3].firstChild;
      bar.style.width = Math.max(2, Math.round(100 * b[4] / (st.segment_bytes || 1))) + "%";
      cells[3].lastChild.textContent = (b[1] === b[2] ? KV.t("offset") + " " + b[1] : KV.t("offsets") + " " + b[1] + "–" + b[2]) +
        " · " + b[4] + " B · ts " + b[3];
      tr.classList.toggle("has-index", !!ie);
    });
    Array.from(body.children).forEach(function (tr) { if (!want.has(tr.id)) tr.remove(); });
    const entries = (lay.offset_index || []).length;
    root.querySelector("#ss-caption").textContent = KV.t("ss_caption", { log: lay.files.log, size: fmt(lay.size),
      max: fmt(st.segment_bytes), batches: lay.batches.length, index: lay.files.index, entries: entries,
      timeindex: lay.files.timeindex, tentries: (lay.time_index || []).length, interval: lay.index_interval_bytes }) +
      (lay.truncated ? " " + KV.t("ss_truncated") : "");
    root.querySelector("#ss-table-caption").textContent = KV.t("ss_batches_of", { log: lay.files.log });
  }

  function clearMarks(root) {
    root.querySelectorAll(".ss-row").forEach(function (tr) {
      tr.classList.remove("probe-index", "probe-time", "scan", "hit", "answer", "range", "fit-focus");
      delete tr.dataset.mark;
      delete tr.children[2].dataset.mark;
    });
    root.querySelectorAll(".ss-file").forEach(function (b) { b.classList.remove("chosen", "candidate"); delete b.dataset.mark; });
  }

  function rowsOf(root) { return Array.from(root.querySelectorAll(".ss-row")); }

  function show(root, n, manual) {
    const steps = root._steps || [];
    if (!steps.length) return;
    n = Math.max(0, Math.min(steps.length - 1, n));
    if (manual) stop(root);
    root._step = n;
    clearMarks(root);
    const lk = root._lookup;
    const rows = rowsOf(root);
    const step = steps[n];
    // the chosen segment stays marked after step 1
    (lk.candidates || []).forEach(function (c) {
      const b = document.getElementById("ss-file-" + c);
      if (b) {
        b.classList.add(c === lk.segment ? "chosen" : "candidate");
        if (c === lk.segment) b.dataset.mark = KV.t("ss_chosen");
      }
    });
    function mark(pred, cls, label) {
      rows.forEach(function (tr) {
        if (!pred(tr)) return;
        tr.classList.add(cls);
        if (label) { tr.dataset.mark = label; tr.children[2].dataset.mark = label; tr.classList.add("fit-focus"); }
      });
    }
    if (step.kind === "tprobe") {
      const p = step.probe;
      mark(function (tr) { const i = tr.dataset.timeEntry; return i !== "" && +i >= p[0] && +i <= p[1]; }, "range");
      mark(function (tr) { return tr.dataset.timeEntry !== "" && +tr.dataset.timeEntry === p[2]; }, "probe-time",
        p[5] === "left" ? KV.t("ss_probe") + " ←" : p[5] === "right" ? KV.t("ss_probe") + " →" : KV.t("ss_probe"));
    } else if (step.kind === "probe") {
      const p = step.probe;
      mark(function (tr) { const i = tr.dataset.indexEntry; return i !== "" && +i >= p[0] && +i <= p[1]; }, "range");
      mark(function (tr) { return tr.dataset.indexEntry !== "" && +tr.dataset.indexEntry === p[2]; }, "probe-index",
        p[5] === "left" ? KV.t("ss_probe") + " ←" : p[5] === "right" ? KV.t("ss_probe") + " →" : KV.t("ss_probe"));
    } else if (step.kind === "scan") {
      const s = step.scan;
      mark(function (tr) { return +tr.dataset.position === s[0]; }, s[4] ? "hit" : "scan", s[4] ? KV.t("ss_found") : KV.t("ss_scan") + " ↓");
    } else if (step.kind === "answer" && lk.position !== null && lk.position !== undefined) {
      mark(function (tr) { return +tr.dataset.position === lk.position; }, "answer", KV.t("ss_answer"));
    }
    root.querySelectorAll("#ss-steps li").forEach(function (li, i) {
      li.classList.toggle("current", i === n);
      li.classList.toggle("fit-focus", i === n);
      li.value = i + 1;           // its number, though the steps before it are not shown
      li.classList.toggle("past", i < n);
      if (i === n) li.setAttribute("aria-current", "step"); else li.removeAttribute("aria-current");
    });
    // A list shortened to fit the stage keeps the current step in sight (the answer, at the end).
    const ol = root.querySelector("#ss-steps"), at = ol.querySelector("li.current");
    if (at && ol.scrollHeight > ol.clientHeight + 1) {
      ol.scrollTop += at.getBoundingClientRect().top - ol.getBoundingClientRect().top - ol.clientHeight / 2;
    }
    if (KV.fitStage) KV.fitStage();     // a phone's stage shows the rows this step marks
    root.querySelector("#ss-stepno").textContent = KV.t("ss_step_of", { n: n + 1, total: steps.length });
    root.querySelector("#ss-prev").disabled = n === 0;
    root.querySelector("#ss-next").disabled = n === steps.length - 1;
    const cur = rows.find(function (tr) { return tr.dataset.mark; });
    const wrap = root.querySelector(".ss-tablewrap");
    if (cur && wrap && wrap.scrollHeight > wrap.clientHeight + 1) {
      wrap.scrollTop += cur.getBoundingClientRect().top - wrap.getBoundingClientRect().top - wrap.clientHeight / 2;
    } else if (cur && !KV.reducedMotion() && cur.scrollIntoView && root._autoscroll) cur.scrollIntoView({ block: "nearest" });
  }

  function stop(root) { if (root._timer) { window.clearInterval(root._timer); root._timer = null; } }
  function play(root, from) {
    stop(root);
    const steps = root._steps || [];
    if (KV.reducedMotion()) { show(root, steps.length - 1); return; }
    let n = from;
    show(root, n);
    root._timer = window.setInterval(function () {
      n += 1;
      if (n >= steps.length) { stop(root); return; }
      show(root, n);
    }, STEP_MS / (KV.speed ? KV.speed() : 1));
  }

  function drawLookup(root, st) {
    const lk = st.lookup;
    const box = root.querySelector("#ss-lookup");
    if (!lk) { box.hidden = true; root._lookup = null; root._steps = []; return; }
    const isNew = !root._lookup || root._lookup.seq !== lk.seq;
    if (!isNew) { show(root, root._step); return; }   // the table may have been redrawn: re-mark
    box.hidden = false;
    root._lookup = lk;
    root._steps = st.lookup_steps || [];   // worded by engine/narration.py (en, zh)
    root.querySelector("#ss-lookup-title").textContent = KV.t(lk.mode === "offset" ? "ss_lookup_offset" : "ss_lookup_time",
      { target: lk.target });
    const ol = root.querySelector("#ss-steps");
    ol.textContent = "";
    root._steps.forEach(function (s, i) {
      ol.appendChild(h("li", { "data-step": i, class: "ss-step step-" + s.kind, tabindex: "0", text: s.text }));
    });
    play(root, 0);
  }

  // A step without a lookup whose sentence names .index entries ("the entry '2 → 340'"): those
  // rows are the ones a phone's stage shows (KV.fitStage keeps rows marked .fit-focus), not
  // the newest batches.
  function named(root, run) {
    const cur = run && run.step > 0 ? (run.steps || [])[run.step - 1] : null;
    const say = (cur && cur.say) || "", names = new Set();
    say.replace(/(\d+) → (\d+)/g, function (m) { names.add(m); return m; });
    rowsOf(root).forEach(function (tr) { tr.classList.toggle("fit-focus", !!tr.dataset.entry && names.has(tr.dataset.entry)); });
    if (KV.fitStage) KV.fitStage();
  }

  KV.register("segment-strip", {
    update: function (root, frame) {
      const st = frame.state || {};
      if (!st.layout) return;
      ensure(root);
      drawFiles(root, st);
      drawRows(root, st);
      drawLookup(root, st);
      if (!st.lookup) named(root, st.run);
    },
  });
})();
