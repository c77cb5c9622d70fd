/* Transactions and idempotence (lesson 14): every replica's log of the lesson's topic as
 * cells drawn from the engine's state in each frame -- value, producer id / epoch /
 * sequence of its batch, committed / aborted / open for transactional records, COMMIT and
 * ABORT markers as their own cells -- with the leader's HW, LSO and LEO; the leader's
 * partition directory (.txnindex, .snapshot) and aborted ranges; the producers, the
 * coordinator's table and what each isolation level read last; once a transaction sent
 * offsets, the group's __consumer_offsets partition drawn the same way and each group's
 * committed and pending offsets. Nothing is invented: the
 * state comes from kafkaviz/live/guided_cluster.py, which reads the engine's logs. */
(function () {
  "use strict";
  const CELL_W = 72, CELL_H = 64, LABEL_W = 104, ROW_GAP = 12, TOP = 22, MARK_H = 40;
  const el = KV.el, html = KV.html;

  const TXN_STATUS = { open: true, committed: true, aborted: true };
  // A transactional record's status as a plain word (titles, the text alternative).
  const STATUS_WORD = { open: "tl_word_open", committed: "tl_committed_offsets", aborted: "tl_word_aborted" };
  function statusWord(s) { return STATUS_WORD[s] ? KV.t(STATUS_WORD[s]) : s; }

  function cellOf(g, x, y, c, hatch) {
    const cls = (c.control ? "tl-marker tl-" + c.control.toLowerCase() : "tl-" + c.status) +
      (c.retry_of !== undefined ? " tl-retried" : "");
    const node = el("g", { class: "tl-cell " + cls, transform: "translate(" + x + "," + y + ")" });
    node.append(el("rect", { width: CELL_W - 4, height: CELL_H, rx: 4, class: "tl-cell-bg" }));
    if (c.status === "aborted") {
      node.append(el("rect", { width: CELL_W - 4, height: CELL_H, rx: 4, class: "tl-hatch", fill: "url(#" + hatch + ")" }));
    }
    node.append(el("text", { x: (CELL_W - 4) / 2, y: 17, "text-anchor": "middle", class: "tl-value" },
      c.control ? "◆" + c.control : String(c.value)));
    node.append(el("text", { x: (CELL_W - 4) / 2, y: 32, "text-anchor": "middle", class: "tl-ids" },
      "pid " + c.producer_id + (c.producer_id >= 0 ? " e" + c.producer_epoch : "")));
    node.append(el("text", { x: (CELL_W - 4) / 2, y: 45, "text-anchor": "middle", class: "tl-ids" },
      c.control ? KV.t("tl_marker") : c.sequence >= 0 ? "seq " + c.sequence : KV.t("tl_no_seq")));
    if (TXN_STATUS[c.status] || c.retry_of !== undefined) {
      node.append(el("text", { x: (CELL_W - 4) / 2, y: 58, "text-anchor": "middle", class: "tl-status" },
        c.retry_of !== undefined ? KV.t("tl_retry", { id: c.retry_of }) : KV.t("tl_" + c.status)));
    }
    node.append(el("title", {}, KV.t("tl_cell_title", { offset: c.offset, what: c.control ? KV.t("tl_marker_of", { control: c.control }) : c.value,
      pid: c.producer_id, epoch: c.producer_epoch, seq: c.sequence }) +
      (c.status !== "plain" && c.status !== "marker" ? ", " + statusWord(c.status) : "") +
      (c.retry_of !== undefined ? ", " + KV.t("tl_by_retry", { id: c.retry_of }) : "")));
    g.append(node);
  }

  function marker(svg, x, top, bottom, label, row, cls) {
    svg.append(el("line", { x1: x, x2: x, y1: top, y2: bottom + 6 + row * 14, class: "tl-mark " + cls }));
    svg.append(el("text", { x: x + 3, y: bottom + 16 + row * 14, class: "tl-mark-label " + cls }, label));
  }

  // key: "0" for the lesson's partition 0 (ids tl-p0, tl-lane-0-<broker>), "o0" for __consumer_offsets-0.
  function drawPartition(box, p, topic, key) {
    key = key === undefined ? String(p.partition) : key;
    const id = "tl-p" + key;
    const sec = KV.keep(box, id, function () { return html("div", { class: "tl-partition" }); });
    sec.replaceChildren();
    const lanes = p.replicas || [];
    let cols = 4;
    lanes.forEach(function (l) { if (l.alive) cols = Math.max(cols, (l.cells || []).length ? l.cells[l.cells.length - 1].offset + 2 : 1); });
    const first = Math.min.apply(null, lanes.filter(function (l) { return l.alive && l.cells && l.cells.length; })
      .map(function (l) { return l.cells[0].offset; }).concat([0]));
    const head = html("h3", { class: "tl-title" }, topic + "-" + p.partition + " · " + KV.t("leader") + " " +
      (p.leader >= 0 ? KV.t("broker_n", { b: p.leader }) : "—") + " · HW " + p.high_watermark + " · LSO " +
      p.last_stable_offset + " · LEO " + p.leo);
    sec.append(head);
    // Lane names in their own column, so a narrow screen scrolling the cells still sees them.
    const X0 = 6;
    const width = X0 + (cols - first) * CELL_W + 40;
    const lanesH = lanes.length * (CELL_H + ROW_GAP);
    const height = TOP + lanesH + MARK_H;
    const names = el("svg", { viewBox: "0 0 " + LABEL_W + " " + height, width: LABEL_W, height: height,
      class: "tl-names", "aria-hidden": "true" });
    const svg = el("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height, class: "tl-svg",
      role: "img", "aria-labelledby": id + "-t" });
    svg.append(el("title", { id: id + "-t" }, topic + "-" + p.partition));
    const hatch = "tl-hatch-" + key;
    const defs = el("defs", {});
    const pat = el("pattern", { id: hatch, width: 6, height: 6, patternUnits: "userSpaceOnUse",
      patternTransform: "rotate(45)" });
    pat.append(el("line", { x1: 0, y1: 0, x2: 0, y2: 6, class: "tl-hatch-line" }));
    defs.append(pat);
    svg.append(defs);
    for (let o = first; o < cols; o++) {
      svg.append(el("text", { x: X0 + (o - first) * CELL_W + (CELL_W - 4) / 2, y: 14, "text-anchor": "middle",
        class: "tl-offset" }, String(o)));
    }
    const text = [];
    lanes.forEach(function (l, i) {
      const y = TOP + i * (CELL_H + ROW_GAP);
      names.append(el("text", { x: 4, y: y + 20, class: "tl-lane-name" }, (l.leader ? "♛ " : "") + KV.t("broker_n", { b: l.broker })));
      names.append(el("text", { x: 4, y: y + 38, class: "tl-lane-sub" },
        !l.alive ? KV.t("down") : (l.leader ? KV.t("leader") : KV.t("follower")) + (p.isr.indexOf(l.broker) >= 0 ? " · ISR" : "")));
      if (!l.alive) return;
      const g = el("g", { id: "tl-lane-" + key + "-" + l.broker, class: "tl-lane" });
      (l.cells || []).forEach(function (c) { cellOf(g, X0 + (c.offset - first) * CELL_W, y, c, hatch); });
      svg.append(g);
      if (l.leader) {
        text.push(KV.t("broker_n", { b: l.broker }) + ": " + (l.cells || []).map(function (c) {
          return c.offset + " " + (c.control ? "[" + c.control + "]" : c.value) +
            (STATUS_WORD[c.status] ? " (" + statusWord(c.status) + ")" : "");
        }).join(", "));
      }
    });
    // HW, LSO and LEO of the leader: lines across the lanes, labels below (stacked when equal).
    const bottom = TOP + lanesH - ROW_GAP;
    const marks = [["HW", p.high_watermark, "tl-hw"], ["LSO", p.last_stable_offset, "tl-lso"], ["LEO", p.leo, "tl-leo"]];
    const rows = {};
    marks.forEach(function (m) {
      if (typeof m[1] !== "number") return;
      const row = rows[m[1]] = (rows[m[1]] === undefined ? 0 : rows[m[1]] + 1);
      marker(svg, X0 + (m[1] - first) * CELL_W - 3, TOP - 4, bottom, m[0] + " " + m[1], row, m[2]);
    });
    const scroll = html("div", { class: "scroll-x tl-scroll", tabindex: "0", role: "region", "aria-label": topic + "-" + p.partition });
    scroll.append(svg);
    const strip = html("div", { class: "tl-strip" });
    strip.append(names, scroll);
    sec.append(strip);
    scroll.scrollLeft = scroll.scrollWidth;    // a narrow screen sees the newest offsets and the markers first
    sec.append(html("p", { class: "tl-text visually-hidden", id: id + "-text" }, text.join(". ")));
    // The leader's partition directory.
    const files = html("ul", { class: "tl-files", "aria-label": KV.t("files_of", { p: topic + "-" + p.partition }) });
    (p.files || []).forEach(function (f) {
      const tag = /\.txnindex$/.test(f.name) ? KV.t("tl_txnindex") : /\.snapshot$/.test(f.name) ? KV.t("tl_snapshot") : "";
      const li = html("li", { class: "tl-file" + (tag ? " tl-file-key" : ""), "data-file": f.name });
      li.append(html("code", {}, f.name), html("span", { class: "tl-size" }, " " + f.size + " B"));
      if (tag) li.append(html("span", { class: "tl-tag" }, " ← " + tag));
      files.append(li);
    });
    const dir = html("div", { class: "tl-dir" });
    dir.append(html("p", { class: "tl-dir-title" }, KV.t("tl_dir", { dir: "broker-" + p.leader + "/" + topic + "-" + p.partition + "/" })));
    dir.append(files);
    if ((p.aborted || []).length) {
      dir.append(html("p", { class: "tl-aborted" }, KV.t("tl_aborted_ranges") + " " + p.aborted.map(function (a) {
        return "pid " + a.producer_id + ": " + a.first_offset + "–" + a.last_offset;
      }).join("; ")));
    }
    sec.append(dir);
  }

  function table(target, heads, rows, empty) {
    const node = document.getElementById(target);
    if (!node) return;
    if (!rows.length) { node.replaceChildren(html("p", { class: "note" }, empty)); return; }
    const t = html("table", { class: "tl-table" });
    const tr = html("tr", {});
    heads.forEach(function (h) { tr.append(html("th", { scope: "col" }, h)); });
    t.append(html("thead", {}), html("tbody", {}));
    t.tHead.append(tr);
    rows.forEach(function (r) {
      const row = html("tr", {});
      r.forEach(function (v, i) { row.append(html(i ? "td" : "th", i ? {} : { scope: "row" }, String(v))); });
      t.tBodies[0].append(row);
    });
    node.replaceChildren(t);
  }

  KV.register("txn-log", {
    update(element, frame) {
      const st = frame.state || {};
      const parts = st.partitions || [];
      if (!parts.length) { element.replaceChildren(html("p", { class: "note" }, KV.t("no_topic"))); return; }
      parts.forEach(function (p) { drawPartition(element, p, st.topic); });
      (st.offsets_partitions || []).forEach(function (p) {
        drawPartition(element, p, "__consumer_offsets", "o" + p.partition);
      });
      const links = st.client_links || [];
      const linkNote = KV.keep(element, "tl-links", function () { return html("p", { class: "tl-links", role: "status" }); });
      linkNote.textContent = links.length ? links.map(function (f) {
        return KV.t("tl_link_cut", { a: f.src === -1 ? KV.t("tl_client") : KV.t("broker_n", { b: f.src }),
          b: f.dst === -1 ? KV.t("tl_client") : KV.t("broker_n", { b: f.dst }), arrow: "→" });
      }).join(" ") : KV.t("tl_links_ok");
      element.append(linkNote);
      table("txn-producers", [KV.t("tl_name"), KV.t("tl_idempotent"), KV.t("tl_pid"), KV.t("tl_epoch"), "transactional.id", KV.t("tl_state"), KV.t("tl_next_seq")],
        (st.producers || []).map(function (p) {
          return [p.name, p.idempotent ? "✓" : "✗", p.producer_id, p.producer_epoch, p.transactional_id || "—",
            p.txn_state === "none" ? "—" : p.txn_state,
            Object.keys(p.next_sequence || {}).map(function (k) { return k + ": " + p.next_sequence[k]; }).join(", ") || "—"];
        }), KV.t("tl_no_producers"));
      table("txn-coordinator", ["transactional.id", KV.t("tl_coordinator"), KV.t("tl_pid"), KV.t("tl_epoch"), KV.t("tl_state"), KV.t("tl_partitions")],
        (st.transactions || []).map(function (t) {
          return [t.transactional_id, KV.t("broker_n", { b: t.coordinator }), t.producer_id, t.producer_epoch, t.state,
            (t.partitions || []).map(function (x) { return Array.isArray(x) ? x.join("-") : x; }).join(", ") || "—"];
        }), KV.t("tl_no_txns"));
      const offs = function (xs) { return (xs || []).map(function (o) { return o[0] + "-" + o[1] + "→" + o[2]; }).join(", "); };
      table("txn-group-offsets", [KV.t("tl_group"), KV.t("tl_offsets_partition"), KV.t("tl_committed_offsets"), KV.t("tl_pending_offsets")],
        (st.group_offsets || []).map(function (g) {
          return [g.group, "__consumer_offsets-" + g.offsets_partition, offs(g.committed) || "—",
            (g.pending || []).map(function (x) { return "pid " + x.producer_id + ": " + offs(x.offsets); }).join("; ") || "—"];
        }), KV.t("tl_no_group_offsets"));
      const reads = st.reads || {};
      table("txn-reads", ["isolation.level", KV.t("tl_partition"), KV.t("tl_from"), KV.t("tl_got"), KV.t("tl_skipped")],
        ["read_uncommitted", "read_committed"].filter(function (k) { return reads[k]; }).map(function (k) {
          const r = reads[k];
          return [k, r.partition, r.offset, r.records.map(function (x) { return x.offset + ":" + x.value; }).join(", ") || "—",
            (r.skipped_aborted || []).join(", ") || "—"];
        }), KV.t("tl_no_reads"));
      const names = document.getElementById("producer-names");
      if (names) {
        names.replaceChildren();
        (st.producers || []).forEach(function (p) { names.append(html("option", { value: p.name })); });
      }
    },
  });

  // Forms with several buttons (cut/heal, the transaction calls): the button says which command.
  document.addEventListener("click", function (e) {
    const btn = e.target.closest && e.target.closest("form[data-multi] button[data-cmd]");
    if (!btn) return;
    const input = btn.form.querySelector('input[name="cmd"]');
    if (input) input.value = btn.dataset.cmd;
  }, true);
})();
