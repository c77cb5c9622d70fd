/* Page-cache diagram (lesson 7). The active segment's .log drawn page by page (4 KiB rows):
 * each batch is a block at its byte position (a batch crossing a page boundary spans two
 * rows); the bytes already on disk are solid, the bytes only in the page cache are hatched
 * and labelled. The other files of the partition directory are listed with size and
 * durable size. A crash report says what the power loss cut and where recovery cut the log;
 * a fetch shows the byte range handed to sendfile. Labels and patterns carry every state;
 * colour only repeats them. */
(function () {
  "use strict";
  const h = KV.tree;
  function fmt(n) { return Number(n).toLocaleString("en-US"); }

  function ensure(root) {
    if (root.querySelector(".pc")) return;
    root.appendChild(h("div", { class: "pc" }, [
      h("p", { class: "pc-status", id: "pc-status", role: "status" }),
      h("p", { class: "pc-offsets", id: "pc-offsets" }),
      h("div", { class: "pc-legend" }, [
        h("span", { class: "pc-key durable", text: KV.t("pc_key_durable") }),
        h("span", { class: "pc-key dirty", text: KV.t("pc_cache_only") }),
        h("span", { class: "pc-key sendfile", text: KV.t("pc_key_sendfile") }),
      ]),
      h("div", { class: "pc-pages", id: "pc-pages", role: "list", "aria-label": KV.t("pc_pages_label") }),
      // The files scroll under their column heads on a short stage (KV.fitStage).
      h("div", { class: "pc-files-box stage-fit", tabindex: "0", role: "region", "aria-label": KV.t("pc_files_caption") }, [h("table", { class: "pc-files" }, [
        h("caption", { text: KV.t("pc_files_caption") }),
        h("thead", {}, [h("tr", {}, [h("th", { scope: "col", text: KV.t("pc_col_file") }), h("th", { scope: "col", text: KV.t("pc_col_size") }),
          h("th", { scope: "col", text: KV.t("pc_on_disk") }), h("th", { scope: "col", text: KV.t("pc_cache_only") })])]),
        h("tbody", { id: "pc-file-rows" }),
      ])]),
      h("div", { class: "pc-report stage-fit", id: "pc-report", tabindex: "0", "aria-live": "polite" }),   // may scroll on a short stage (KV.fitStage)
      h("p", { class: "pc-fetch", id: "pc-fetch" }),
    ]));
  }

  function drawPages(st) {
    const box = document.getElementById("pc-pages");
    const logFile = (st.files || []).find(function (f) { return /\.log$/.test(f.name); });
    const batches = (st.log && st.log.batches) || [];
    const size = logFile ? logFile.size : 0;
    const durable = logFile ? logFile.durable : 0;
    const page = st.page_size;
    const pages = Math.max(1, Math.ceil(size / page));
    box.textContent = "";
    for (let i = 0; i < pages; i++) {
      const start = i * page, end = start + page;
      const onDisk = Math.max(0, Math.min(durable, end) - start);
      const used = Math.max(0, Math.min(size, end) - start);
      const state = KV.t(used === 0 ? "empty" : onDisk >= used ? "pc_on_disk" : onDisk > 0 ? "pc_partly" : "pc_cache_only");
      const row = h("div", { class: "pc-page", role: "listitem", id: "pc-page-" + i,
        "aria-label": KV.t("pc_page_aria", { n: i, from: start, to: end - 1, state: state }) }, [
        h("span", { class: "pc-page-label", text: KV.t("pc_page_label", { n: i, state: state }) }),
        h("div", { class: "pc-track" }),
      ]);
      const track = row.lastChild;
      if (onDisk > 0) track.appendChild(h("div", { class: "pc-fill durable", style: "left:0;width:" + (100 * onDisk / page) + "%" }));
      if (used > onDisk) track.appendChild(h("div", { class: "pc-fill dirty",
        style: "left:" + (100 * onDisk / page) + "%;width:" + (100 * (used - onDisk) / page) + "%" }));
      batches.forEach(function (b) {
        const s = Math.max(b[0], start), e = Math.min(b[0] + b[3], end);
        if (e <= s) return;
        const torn = b[0] < durable && b[0] + b[3] > durable;
        track.appendChild(h("div", { class: "pc-batch" + (torn ? " torn" : ""),
          style: "left:" + (100 * (s - start) / page) + "%;width:" + (100 * (e - s) / page) + "%",
          title: KV.t(torn ? "pc_batch_title_torn" : "pc_batch_title", { offset: b[1], from: b[0], to: b[0] + b[3] - 1 }),
          text: b[1] }));
      });
      if (st.fetch && st.fetch.position !== null) {
        const fs = Math.max(st.fetch.position, start), fe = Math.min(st.fetch.position + st.fetch.length, end);
        if (fe > fs) track.appendChild(h("div", { class: "pc-sendfile",
          style: "left:" + (100 * (fs - start) / page) + "%;width:" + (100 * (fe - fs) / page) + "%" }));
      }
      box.appendChild(row);
    }
  }

  function drawFiles(st) {
    const body = document.getElementById("pc-file-rows");
    body.textContent = "";
    (st.files || []).forEach(function (f) {
      body.appendChild(h("tr", { class: f.durable < f.size ? "is-dirty" : "" }, [
        h("th", { scope: "row", text: f.name }), h("td", { text: fmt(f.size) }), h("td", { text: fmt(f.durable) }),
        h("td", { text: f.size > f.durable ? fmt(f.size - f.durable) + " B ⚠" : "0" }),
      ]));
    });
  }

  function drawReport(st) {
    const el = document.getElementById("pc-report");
    const c = (st.crashes || [])[st.crashes.length - 1];
    el.textContent = "";
    if (!c) return;
    const lines = [];
    lines.push(KV.t(c.power_loss ? "pc_power_loss" : "pc_killed", { s: (c.time_ms / 1000).toFixed(1),
      what: c.lost_files.length ? c.lost_files.map(function (f) { return f.file + " " + fmt(f.size_before) + " → " + fmt(f.size_after) + " B"; }).join(", ")
        : KV.t("pc_nothing_lost") }));
    if (c.recovery_cut) lines.push(KV.t("pc_recovery_cut", { file: String(c.recovery_cut.segment).padStart(20, "0") + ".log",
      from: fmt(c.recovery_cut.from), to: fmt(c.recovery_cut.to) }));
    if (c.leo_after === null) lines.push(KV.t("pc_down_restart"));
    else lines.push(KV.t(c.lost_records ? "pc_leo_lost" : "pc_leo_kept", { before: c.leo_before, after: c.leo_after, n: c.lost_records }));
    lines.forEach(function (t, i) { el.appendChild(h("p", { class: i === 0 ? "pc-crash" : "", text: t })); });
  }

  // Messages that travel (issue 17), drawn from the frame's own engine events (each also a
  // line of the timeline): a batch_appended is the produced batch travelling into its bytes in
  // the page cache; a pages_written_back carries each page the OS wrote back to the .log's
  // "on disk" cell, a log_flushed (fsync) the flushed bytes likewise; a log_lookup that served
  // the fetch carries the sendfile range out of the page cache to the consumer's socket (the
  // pages' right edge). Under reduced motion a token appears where it arrives, until the next
  // frame. While shown, a token is <div data-flow="<what>">.
  const FLIGHT_MS = 1300, GAP_MS = 140, MAX_TOKENS = 12;
  function flowTokens(root, frame, st) {
    const pc = root.querySelector(".pc");
    let layer = pc.querySelector(".pc-flow");
    if (!layer) { layer = h("div", { class: "pc-flow", "aria-hidden": "true" }); pc.appendChild(layer); }
    if (frame.snapshot || frame.reset) { layer.replaceChildren(); return; }
    layer.querySelectorAll(".flow-still").forEach(function (n) { n.remove(); });
    // A new step (a click) drops what the last one had not started to move yet.
    const step = (st.run || {}).step;
    if (step !== layer._step) {
      layer._step = step;
      Array.prototype.slice.call(layer.children).forEach(function (n) {
        const a = n.getAnimations()[0];
        if (a && (a.currentTime || 0) < a.effect.getTiming().delay) n.remove();
      });
    }
    const base = pc.getBoundingClientRect(), page = st.page_size || 4096;
    const trackAt = function (pos) {
      const row = document.getElementById("pc-page-" + Math.floor(pos / page));
      if (!row) return null;
      const r = row.querySelector(".pc-track").getBoundingClientRect();
      return { x: r.left - base.left + r.width * ((pos % page) / page), y: r.top - base.top + r.height / 2 };
    };
    const onDisk = function () {
      const tr = Array.from(document.querySelectorAll("#pc-file-rows tr")).find(function (t) { return /\.log$/.test(t.firstChild.textContent); });
      if (!tr) return null;
      const r = tr.children[2].getBoundingClientRect();
      return { x: r.left - base.left + 24, y: r.top - base.top + r.height / 2 };
    };
    const pages = document.getElementById("pc-pages").getBoundingClientRect();
    const batches = (st.log && st.log.batches) || [];
    const out = [];
    (frame.events || []).forEach(function (ev) {
      if (ev.kind === "batch_appended") {
        const to = trackAt(ev.position + ev.size_bytes / 2);
        if (to) out.push({ flow: "produce-batch", label: ev.first_offset + (ev.last_offset !== ev.first_offset ? "–" + ev.last_offset : "") + " · " + ev.size_bytes + " B",
          from: { x: pages.right - base.left - 50, y: pages.top - base.top - 14 }, to: to });
      } else if (ev.kind === "pages_written_back") {
        (ev.files || []).filter(function (f) { return /\.log$/.test(f.file); }).forEach(function (f) {
          for (let at = f.from; at < f.to; at += page) {
            const from = trackAt(at + Math.min(page, f.to - at) / 2), to = onDisk();
            if (from && to) out.push({ flow: "write-back", label: KV.t("pc_page_label", { n: Math.floor(at / page), state: KV.t("pc_on_disk") }), from: from, to: to });
          }
        });
      } else if (ev.kind === "log_flushed") {
        const last = batches.filter(function (b) { return b[1] < ev.up_to_offset; }).pop();
        const from = last && trackAt(last[0] + last[3] / 2), to = onDisk();
        if (from && to) out.push({ flow: "fsync", label: "fsync < " + ev.up_to_offset, from: from, to: to });
      } else if (ev.kind === "log_lookup" && st.fetch && st.fetch.position !== null && st.fetch.position !== undefined) {
        const from = trackAt(st.fetch.position);
        if (from) out.push({ flow: "sendfile", label: "sendfile " + fmt(st.fetch.length) + " B",
          from: from, to: { x: pages.right - base.left - 60, y: from.y - 26 } });
      }
    });
    const reduced = KV.reducedMotion();
    // Labels stay inside the diagram (a phone's narrow pages put a batch near either edge).
    const within = function (q, label) {
      const half = (label.length * 6.7 + 16) / 2;
      return { x: Math.max(half, Math.min(base.width - half, q.x)), y: q.y };
    };
    const at = function (q) { return "translate(" + q.x.toFixed(1) + "px," + q.y.toFixed(1) + "px) translate(-50%,-50%)"; };
    // Without motion every token would rest at once, side by side on one row of the page:
    // only the newest of each kind is shown (the timeline lists them all).
    const shown = reduced ? out.filter(function (t, i) { return !out.slice(i + 1).some(function (u) { return u.flow === t.flow; }); }) : out;
    shown.slice(-MAX_TOKENS).forEach(function (tok, i) {
      tok.from = within(tok.from, tok.label);
      tok.to = within(tok.to, tok.label);
      const node = h("div", { class: "pc-token flow-token" + (tok.flow === "produce-batch" ? "" : " flow-answer"), "data-flow": tok.flow, text: tok.label });
      layer.appendChild(node);
      if (reduced) { node.style.transform = at(tok.to); node.classList.add("flow-still"); return; }
      node.style.transform = at(tok.from);
      node.style.opacity = "0";
      const anim = node.animate([{ transform: at(tok.from), opacity: 1, offset: 0 }, { transform: at(tok.to), opacity: 1, offset: 0.6 },
        { transform: at(tok.to), opacity: 0, offset: 1 }], { duration: FLIGHT_MS / (KV.speed ? KV.speed() : 1), delay: i * GAP_MS, easing: "ease-in-out", fill: "forwards" });
      anim.onfinish = function () { node.remove(); };
    });
  }

  KV.register("page-cache", {
    update: function (root, frame) {
      const st = frame.state || {};
      if (!st.files) return;
      ensure(root);
      const status = document.getElementById("pc-status");
      status.textContent = st.alive ? KV.t("pc_running", { n: st.incarnation }) : KV.t("pc_down");
      status.dataset.state = st.alive ? "up" : "down";
      document.getElementById("pc-offsets").textContent = st.log
        ? KV.t("pc_offsets", { leo: st.log.log_end_offset, rp: st.log.recovery_point,
          fm: st.flush_messages || KV.t("pc_never"), fms: st.flush_ms || KV.t("pc_never") })
        : "";
      drawPages(st);
      drawFiles(st);
      drawReport(st);
      flowTokens(root, frame, st);
      document.getElementById("pc-fetch").textContent = st.fetch
        ? KV.t("pc_fetch", { offset: st.fetch.offset, file: st.fetch.file, position: st.fetch.position,
          length: fmt(st.fetch.length), n: st.fetch.batches })
        : "";
    },
  });
})();
