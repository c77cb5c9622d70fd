/* The compacted partition (lesson 6), from frame.state.compaction: the dirty-ratio meter against
 * min.cleanable.dirty.ratio, the cleaner point, the segments before the last pass beside the
 * segments now (each record as offset, key and value; a tombstone marked ✝; a gap where offsets
 * were removed marked ⋯), and the offset map the last pass built. Words and marks carry every
 * distinction; colour only repeats them. */
(function () {
  "use strict";
  const h = KV.html;
  const t = KV.tree;

  function recordCell(r, prefix, point) {
    const tomb = r[2] === null;
    return h("span", { class: "cp-rec" + (tomb ? " cp-tomb" : "") + (r[0] < point ? " cp-clean" : " cp-dirty"),
      id: prefix + "-r" + r[0], "data-offset": r[0], "data-key": r[1] },
      r[0] + " " + r[1] + (tomb ? " ✝" : "=" + r[2]));
  }

  function segments(list, prefix, point, title) {
    const col = t("div", { class: "cp-col stage-fit", id: prefix, tabindex: "0", role: "region", "aria-label": title }, [   // scrolls on a short stage (KV.fitStage)
     h("h3", { class: "cp-col-title" }, title)]);
    if (!list) { col.appendChild(h("p", { class: "note" }, KV.t("cp_no_pass"))); return col; }
    list.forEach(function (s) {
      const body = h("div", { class: "cp-recs" });
      let next = s.base;
      s.records.forEach(function (r) {
        if (r[0] > next) body.appendChild(h("span", { class: "cp-gap", title: KV.t("cp_gap_title", { a: next, b: r[0] - 1 }) },
          "⋯ " + (r[0] - 1 > next ? next + "–" + (r[0] - 1) : next)));
        body.appendChild(recordCell(r, prefix, point));
        next = r[0] + 1;
      });
      if (s.end > next && !s.active) body.appendChild(h("span", { class: "cp-gap" }, "⋯ " + (s.end - 1 > next ? next + "–" + (s.end - 1) : next)));
      if (!s.records.length && s.active) body.appendChild(h("span", { class: "note" }, KV.t("cp_empty")));
      const state = s.active ? KV.t("cp_active") : (s.end <= point ? KV.t("cp_clean") : KV.t("cp_dirty"));
      col.appendChild(t("div", { class: "cp-seg" + (s.active ? " cp-seg-active" : ""), id: prefix + "-s" + s.base }, [
        h("div", { class: "cp-seg-head" }, String(s.base).padStart(20, "0") + ".log · " + s.size + " B · " + state),
        body]));
    });
    return col;
  }

  function draw(c) {
    const root = h("div", { class: "cp" });
    const pct = Math.round(100 * c.ratio);
    const thr = Math.round(100 * c.min_cleanable_dirty_ratio);
    const above = c.ratio > c.min_cleanable_dirty_ratio;
    root.appendChild(t("div", { class: "cp-meter-box", id: "cp-meter" }, [
      t("div", { class: "cp-meter", "aria-hidden": "true" }, [
        h("span", { class: "cp-meter-fill" + (above ? " cp-above" : ""), style: "width:" + pct + "%" }),
        h("span", { class: "cp-meter-line", style: "left:" + thr + "%" })]),
      h("p", { class: "cp-meter-words", id: "cp-meter-words" }, KV.t("cp_meter", { dirty: c.dirty_bytes,
        total: c.clean_bytes + c.dirty_bytes, ratio: c.ratio.toFixed(2), thr: c.min_cleanable_dirty_ratio,
        verdict: above ? KV.t("cp_will_clean") : KV.t("cp_wont_clean") })),
      h("p", { class: "cp-point", id: "cp-point" }, KV.t("cp_point", { point: c.cleaner_point, unc: c.first_uncleanable_offset }))]));
    const cols = t("div", { class: "cp-cols" }, [
      segments(c.before, "cp-before", c.last_pass ? c.last_pass.first_dirty_offset : 0, KV.t("cp_before")),
      segments(c.segments, "cp-now", c.cleaner_point, KV.t("cp_now"))]);
    root.appendChild(cols);
    const map = t("div", { class: "cp-map", id: "cp-map" }, [h("h3", { class: "cp-col-title" },
      KV.t("cp_map") + (c.pass_running ? " — " + KV.t("cp_filling") : ""))]);
    if (!c.offset_map.length) map.appendChild(h("p", { class: "note" }, KV.t("cp_no_pass")));
    else {
      const ul = h("ul", { class: "cp-map-list" });
      c.offset_map.forEach(function (kv) { ul.appendChild(h("li", { id: "cp-map-" + kv[0] }, kv[0] + " → " + kv[1])); });
      map.appendChild(ul);
    }
    root.appendChild(map);
    return root;
  }

  KV.register("compaction", {
    update: function (root, frame) {
      const c = (frame.state || {}).compaction;
      if (!c) return;
      const fresh = draw(c);
      if (!root.firstElementChild || frame.reset) root.replaceChildren(fresh); else KV.morph(root.firstElementChild, fresh);
    },
  });
})();
