/* Partition-directory diagram: one SVG per partition listing the files the engine
 * reports (Log.files()), grouped by segment, with live sizes. Rows are keyed by
 * element id, so a frame only moves/updates what changed: a rolled segment slides in,
 * a segment renamed to .deleted is marked (hatched, labelled) in place, and a removed
 * file fades out. With prefers-reduced-motion everything just appears/disappears. */
(function () {
  "use strict";
  const ROW = 20, GAP = 8, HEAD = 50, INFO = 16;
  // Two geometries: wide (info in its own column) and narrow (a phone: the segment's
  // offsets go on a line above its files, so names, bars and sizes keep a readable size).
  const WIDE = { W: 600, COL_NAME: 14, COL_INFO: 300, COL_BAR: 452, BAR_W: 84, COL_SIZE: 592, narrow: false };
  const NARROW = { W: 400, COL_NAME: 10, COL_INFO: 10, COL_BAR: 270, BAR_W: 56, COL_SIZE: 394, narrow: true };
  let G = WIDE, W = G.W, COL_NAME = G.COL_NAME, COL_INFO = G.COL_INFO, COL_BAR = G.COL_BAR, BAR_W = G.BAR_W,
    COL_SIZE = G.COL_SIZE;
  function setGeometry(g) {
    G = g; W = g.W; COL_NAME = g.COL_NAME; COL_INFO = g.COL_INFO; COL_BAR = g.COL_BAR; BAR_W = g.BAR_W; COL_SIZE = g.COL_SIZE;
  }

  const el = KV.el;
  function part_label(p) { return KV.t("files_of", { p: p }); }
  function safe(s) { return String(s).replace(/[^A-Za-z0-9_-]/g, "_"); }
  function fmtBytes(n) { return n.toLocaleString("en-US") + " B"; }
  function baseName(name) { return name.replace(/\.deleted$/, ""); }
  function kindOf(f) {
    const n = baseName(f.name);
    if (n.endsWith(".log")) return "log";
    if (n.endsWith(".timeindex")) return "timeindex";
    if (n.endsWith(".index")) return "index";
    return "other";
  }

  function ensureSvg(root, p) {
    let fig = document.getElementById("pd-fig-" + p);
    if (fig) return fig.querySelector("svg");
    fig = document.createElement("figure");
    fig.id = "pd-fig-" + p;
    fig.className = "pd-figure";
    const svg = el("svg", { id: "pd-svg-" + p, viewBox: "0 0 " + W + " 120", role: "group",
      "aria-label": part_label(p), class: "pd-svg stage-fit" });
    const defs = el("defs");
    const pat = el("pattern", { id: "pd-hatch-" + p, width: 6, height: 6, patternUnits: "userSpaceOnUse",
      patternTransform: "rotate(45)" });
    pat.appendChild(el("rect", { width: 6, height: 6, class: "hatch-bg" }));
    pat.appendChild(el("line", { x1: 0, y1: 0, x2: 0, y2: 6, class: "hatch-line" }));
    defs.appendChild(pat);
    svg.appendChild(defs);
    svg.appendChild(el("text", { x: COL_NAME, y: 20, class: "pd-title", id: "pd-title-" + p }));
    svg.appendChild(el("text", { x: COL_NAME, y: 40, class: "pd-sub", id: "pd-sub-" + p }));
    svg.appendChild(el("g", { class: "pd-rows", id: "pd-rows-" + p }));
    fig.appendChild(svg);
    root.appendChild(fig);
    svg.dataset.fresh = "1";
    return svg;
  }

  function layout(part) {
    // Groups in the engine's order: segments by base offset, then other files.
    const groups = new Map();
    part.files.forEach(function (f) {
      const key = f.segment === null || f.segment === undefined ? "other" : String(f.segment);
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(f);
    });
    const keys = Array.from(groups.keys()).sort(function (a, b) {
      if (a === "other") return 1;
      if (b === "other") return -1;
      return Number(a) - Number(b);
    });
    const segs = part.segments.slice().sort(function (a, b) { return a - b; });
    const rows = [];
    let y = HEAD;
    keys.forEach(function (key, gi) {
      const files = groups.get(key);
      const seg = key === "other" ? null : Number(key);
      const idx = segs.indexOf(seg);
      let range = "";
      if (seg !== null && idx >= 0) {
        const end = idx + 1 < segs.length ? segs[idx + 1] - 1 : part.log_end_offset - 1;
        range = end > seg ? KV.t("offset") + " " + seg + "–" + end : end === seg ? KV.t("offset") + " " + seg : KV.t("empty");
      }
      if (G.narrow && seg !== null) y += INFO;
      // "marked .deleted" heads a group only when all of it is (compaction swaps a live file in beside its old one)
      const deleted = files.every(function (f) { return f.deleted; });
      files.forEach(function (f, fi) {
        rows.push({ file: f, seg: seg, y: y, first: fi === 0, last: fi === files.length - 1, group: gi,
          range: range, active: seg === part.active_segment && !f.deleted,
          groupRows: files.length, groupDeleted: deleted });
        y += ROW;
      });
      y += GAP;
    });
    return { rows: rows, height: y + 4 };
  }

  function capacity(kind, cfg) {
    if (kind === "log") return cfg.segmentBytes;
    if (kind === "index" || kind === "timeindex") return cfg.indexBytes;
    return 0;
  }

  function fillRow(g, row, p, cfg) {
    const f = row.file, kind = kindOf(f);
    g.replaceChildren();
    g.setAttribute("class", "pd-row kind-" + kind + (f.deleted ? " is-deleted" : "") + (row.active ? " is-active" : "") +
      (g.classList.contains("pd-enter") ? " pd-enter" : "") + (g.classList.contains("pd-new") ? " pd-new" : ""));
    const head = G.narrow && row.seg !== null ? INFO : 0;
    if (row.first) {
      g.appendChild(el("rect", { x: 4, y: -14 - head, width: W - 8, height: row.groupRows * ROW + 2 + head, rx: 4,
        class: "seg-bg" + (row.group % 2 ? " alt" : "") }));
      if (head) {
        const label = row.groupDeleted ? "✗ " + KV.t("marked_deleted") :
          (row.range || "") + (row.seg === cfg.active ? " · " + KV.t("active") : "");
        g.appendChild(el("text", { x: COL_NAME, y: -16, class: "pd-info pd-group-info" }, label));
      }
    }
    // At 390 px a ".timeindex.deleted" name would run under the size bar: squeeze it to fit.
    const squeeze = G.narrow && f.name.length > 34 ? { textLength: COL_BAR - COL_NAME - 6, lengthAdjust: "spacingAndGlyphs" } : {};
    g.appendChild(el("text", Object.assign({ x: COL_NAME, y: 0, class: "pd-name" }, squeeze), f.name));
    // The .log row carries the segment's offsets; the others stay quiet unless deleted.
    let info = "";
    if (f.deleted) info = "✗ " + KV.t("marked_deleted");
    else if (kind === "log") info = (row.range || "") + (row.active ? " · " + KV.t("active") : "");
    else if (kind === "other" && f.kind && f.kind !== f.name) info = f.kind === "other" ? KV.t("pd_other") : f.kind.replace(/[_-]/g, " ");
    if (!G.narrow) g.appendChild(el("text", { x: COL_INFO, y: 0, class: "pd-info" }, info));
    const cap = capacity(kind, cfg);
    g.appendChild(el("rect", { x: COL_BAR, y: -10, width: BAR_W, height: 12, class: "bar-track" }));
    if (cap > 0) {
      const w = Math.max(f.size > 0 ? 1 : 0, Math.min(BAR_W, BAR_W * f.size / cap));
      const bar = el("rect", { x: COL_BAR, y: -10, width: w.toFixed(1), height: 12, class: "bar bar-" + kind });
      if (f.deleted) bar.setAttribute("fill", "url(#pd-hatch-" + p + ")");
      g.appendChild(bar);
    }
    g.appendChild(el("text", { x: COL_SIZE, y: 0, class: "pd-size", "text-anchor": "end" }, fmtBytes(f.size)));
    g.appendChild(el("title", {}, KV.t(f.deleted ? "pd_file_title_deleted" : "pd_file_title", { name: f.name, size: f.size })));
  }

  // Segments the engine just rolled to, and partitions whose log start offset moved,
  // get a temporary outline/label (not motion, so kept under reduced motion too).
  function noteEvents(frame) {
    const fresh = new Set(), moved = new Set();
    (frame.events || []).forEach(function (ev) {
      if (ev.kind === "segment_rolled") fresh.add(ev.partition + ":" + ev.new_segment);
      if (ev.kind === "log_start_offset_changed") moved.add(ev.partition);
    });
    return { fresh: fresh, moved: moved };
  }

  function flash(node, cls) {
    node.classList.add(cls);
    window.clearTimeout(node["_t_" + cls]);
    node["_t_" + cls] = window.setTimeout(function () { node.classList.remove(cls); }, 2000);
  }

  function render(root, part, cfg, reduced, noted) {
    const p = part.partition;
    const svg = ensureSvg(root, p);
    const fresh = svg.dataset.fresh === "1";
    svg.dataset.fresh = "0";
    document.getElementById("pd-title-" + p).textContent = part.dir + "/";
    document.getElementById("pd-sub-" + p).textContent =
      KV.t("log_start") + " " + part.log_start_offset + " · " + KV.t("log_end") + " " + part.log_end_offset + " · " +
      part.segments.length + " " + KV.t(part.segments.length === 1 ? "segment" : "segments") + " · " + fmtBytes(part.size_bytes);
    const rowsG = document.getElementById("pd-rows-" + p);
    const lay = layout(part);
    svg.setAttribute("viewBox", "0 0 " + W + " " + lay.height);
    const seen = new Set();
    // A .deleted file keeps its live name's row (renamed in place) unless a live file of that
    // name exists too: compaction swaps a new segment in under the same name (lesson 6).
    const live = new Set(lay.rows.filter(function (r) { return !r.file.deleted; }).map(function (r) { return r.file.name; }));
    lay.rows.forEach(function (row) {
      const twin = row.file.deleted && live.has(baseName(row.file.name));
      const id = "pd-" + p + "-" + safe(baseName(row.file.name)) + (twin ? "-deleted" : "");
      seen.add(id);
      let g = document.getElementById(id);
      if (!g || g.classList.contains("pd-leave")) {
        if (g) g.remove();
        g = el("g", { id: id });
        if (!fresh && !reduced) g.classList.add("pd-enter");
        rowsG.appendChild(g);
        // Start where it lands (no slide from the top), then let CSS animate the entry.
        g.style.transform = "translate(0px, " + (row.y + 14) + "px)";
      }
      g.dataset.name = row.file.name;
      fillRow(g, row, p, cfg);
      g.style.transform = "translate(0px, " + (row.y + 14) + "px)";
      if (noted && row.seg !== null && noted.fresh.has(p + ":" + row.seg)) flash(g, "pd-new");
    });
    if (noted && noted.moved.has(p)) flash(document.getElementById("pd-sub-" + p), "pd-moved");
    rowsG.querySelectorAll("g.pd-row").forEach(function (g) {
      if (seen.has(g.id) || g.classList.contains("pd-leave")) return;
      if (reduced) { g.remove(); return; }
      g.classList.remove("pd-enter");
      g.classList.add("pd-leave");
      window.setTimeout(function () { g.remove(); }, 700);
    });
  }

  // A produced batch travels into the active segment (issue 17): each batch_appended of the
  // frame is a token from the producer's side (top right) to the .log file it landed in,
  // labelled with its offsets; under reduced motion it just appears on that file. The
  // timeline has the same event as a line.
  function batchTokens(svg, p, lay, frame, reduced) {
    let layer = document.getElementById("pd-flow-" + p);
    if (!layer) { layer = el("g", { id: "pd-flow-" + p, "aria-hidden": "true" }); svg.appendChild(layer); }
    const batches = (frame.events || []).filter(function (ev) { return ev.kind === "batch_appended" && ev.partition === p; });
    // Without motion a token rests until the next step or the next batches: a step that
    // produced nothing shows none.
    const step = ((frame.state || {}).run || {}).step;
    if (batches.length || step !== layer._step) layer.querySelectorAll(".flow-still").forEach(function (n) { n.remove(); });
    layer._step = step;
    if (!batches.length) return;
    batches.slice(-8).forEach(function (ev, i) {
      const row = lay.rows.find(function (r) { return r.seg === ev.segment && kindOf(r.file) === "log" && !r.file.deleted; });
      if (!row) return;
      const label = ev.first_offset + (ev.last_offset !== ev.first_offset ? "–" + ev.last_offset : "") + " · " + ev.size_bytes + " B";
      const w = Math.round(label.length * 6.7 + 10);
      const end = { x: COL_BAR + BAR_W / 2, y: row.y + 10 }, start = { x: W - w / 2 - 4, y: 12 };
      const g = el("g", { class: "flow-token", "data-flow": "produce-batch", "data-segment": ev.segment });
      g.append(el("rect", { x: -w / 2, y: -9, width: w, height: 18, rx: 9 }), el("text", { x: 0, y: 4, "text-anchor": "middle" }, label));
      layer.appendChild(g);
      const at = function (q) { return "translate(" + q.x.toFixed(1) + "px," + q.y.toFixed(1) + "px)"; };
      if (reduced) { g.style.transform = at(end); g.classList.add("flow-still"); return; }
      g.style.transform = at(start);
      const anim = g.animate([{ transform: at(start), opacity: 1, offset: 0 }, { transform: at(end), opacity: 1, offset: 0.6 },
        { transform: at(end), opacity: 0, offset: 1 }], { duration: 1400, delay: i * 220, easing: "ease-in-out", fill: "both" });
      anim.onfinish = function () { g.remove(); };
    });
  }

  KV.register("partition-dir", {
    update: function (root, frame) {
      const st = frame.state || {};
      const cfg = { segmentBytes: st.segment_bytes || 1, indexBytes: st.index_bytes || 1 };
      const geometry = (root.clientWidth || 600) < 540 ? NARROW : WIDE;
      if (geometry !== G) { setGeometry(geometry); root.replaceChildren(); }
      const reduced = KV.reducedMotion();
      if (frame.reset) root.replaceChildren();
      const noted = frame.snapshot ? null : noteEvents(frame);
      ((frame.state && frame.state.partitions) || []).forEach(function (part) {
        cfg.active = part.active_segment;
        render(root, part, cfg, reduced, noted);
        if (!frame.snapshot) batchTokens(document.getElementById("pd-svg-" + part.partition), part.partition, layout(part), frame, reduced);
      });
    },
  });
})();
