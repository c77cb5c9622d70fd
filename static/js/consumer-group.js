/* The consumer group (lessons 12, 13), from frame.state.group and frame.state.protocol:
 * the group's state, generation, protocol, leader and coordinator; every consumer with its
 * pattern, status and partitions (idle when it owns none, struck through when dead); one row
 * per partition coloured by owner AND marked with the owner's name and pattern, with the
 * committed offset and the high watermark as bars and the lag between them; the latest
 * protocol steps (JoinGroup, SyncGroup, heartbeats answered REBALANCE_IN_PROGRESS, ...). */
(function () {
  "use strict";
  const h = KV.html;
  const t = KV.tree;
  const PATTERNS = 6;

  function patternOf(names, name) {
    const i = names.indexOf(name);
    return i < 0 ? "none" : String(i % PATTERNS);
  }

  function chip(names, name, extra) {
    return t("span", { class: "cg-chip", "data-pattern": patternOf(names, name) }, [
      h("span", { class: "cg-swatch", "aria-hidden": "true" }), h("span", { class: "cg-chip-name" }, name + (extra || ""))]);
  }

  function draw(st) {
    const g = st.group;
    const root = h("div", { class: "cg" });
    if (!g) {
      root.appendChild(h("p", { class: "cg-empty", id: "cg-empty" }, KV.t("cg_no_group")));
      return root;
    }
    const names = g.consumers.map(function (c) { return c.name; });
    root.appendChild(h("p", { class: "cg-head", id: "cg-head" }, KV.t("cg_head", {
      group: g.group, state: g.state || "?", gen: g.generation === undefined || g.generation === null ? "–" : g.generation,
      protocol: g.protocol || "–", leader: g.leader || "–",
      coord: g.coordinator === null || g.coordinator === undefined ? "?" : g.coordinator, op: g.offsets_partition })));

    const ul = h("ul", { class: "cg-consumers", id: "cg-consumers", "aria-label": KV.t("cg_consumers") });
    g.consumers.forEach(function (c) {
      let what;
      if (c.status === "closed") what = KV.t("cg_closed");
      else if (c.status === "left") what = KV.t("cg_left");
      else if (c.status === "expired") what = KV.t("cg_expired");
      else if (c.status === "disconnected") what = KV.t("cg_disconnected");
      else if (!c.alive) what = KV.t("cg_dead");
      else if (c.status !== "stable") what = KV.t("cg_joining", { status: c.status });
      else if (!c.owned.length) what = KV.t("cg_idle");
      else what = KV.t("cg_owns", { list: c.owned.map(function (p) { return g.topic + "-" + p; }).join(", ") });
      const li = t("li", { class: "cg-consumer" + (c.alive ? "" : " cg-dead") + (c.alive && c.status === "stable" && !c.owned.length ? " cg-idle" : ""),
        id: "cg-c-" + c.name, "data-consumer": c.name }, [
        chip(names, c.name, c.member_id && g.leader === c.member_id ? " ♛" : ""),
        h("span", { class: "cg-what" }, (c.member_id ? c.member_id + " · " : "") + what)]);
      ul.appendChild(li);
    });
    root.appendChild(ul);

    const max = Math.max(1, ...g.partitions.map(function (p) { return p.high_watermark || 0; }));
    const table = h("div", { class: "cg-parts", id: "cg-parts", role: "list" });
    g.partitions.forEach(function (p) {
      const hw = p.high_watermark || 0;
      const committed = p.committed === null || p.committed === undefined ? null : p.committed;
      const bar = t("div", { class: "cg-bar", "aria-hidden": "true" }, [
        h("span", { class: "cg-bar-committed", style: "width:" + (100 * (committed || 0) / max) + "%" }),
        h("span", { class: committed === null ? "cg-bar-uncommitted" : "cg-bar-lag", style: "width:" + (100 * Math.max(0, hw - (committed || 0)) / max) + "%" })]);
      const words = KV.t("cg_offsets", { committed: committed === null ? KV.t("cg_none") : committed, hw: hw,
        lag: p.lag === null || p.lag === undefined ? (committed === null ? KV.t("cg_lag_unknown") : "–") : p.lag });
      table.appendChild(t("div", { class: "cg-part", role: "listitem", id: "cg-p-" + p.partition,
        "data-owner": p.owner || "", "data-pattern": p.owner ? patternOf(names, p.owner) : "none",
        "data-committed": committed === null ? "" : committed, "data-lag": p.lag === null || p.lag === undefined ? "" : p.lag }, [
        h("span", { class: "cg-part-name" }, g.topic + "-" + p.partition),
        p.owner ? chip(names, p.owner) : h("span", { class: "cg-chip cg-unowned" }, KV.t("cg_unowned")),
        bar, h("span", { class: "cg-part-words" }, words)]));
    });
    root.appendChild(table);

    const steps = st.protocol || [];
    // On a short stage the list scrolls in a shorter box, kept at its newest step (KV.fitStage).
    const ol = h("ol", { class: "cg-protocol stage-fit", id: "cg-protocol", tabindex: "0", "data-fit-end": "", "aria-label": KV.t("cg_protocol") });
    steps.forEach(function (s) {
      ol.appendChild(h("li", { class: "cg-step cg-k-" + s.kind, id: "cg-s-" + s.seq }, KV.secs(s.time_ms, 1) + " · " + s.text));
    });
    root.appendChild(t("details", { class: "cg-protocol-box", open: "" }, [h("summary", {}, KV.t("cg_protocol")), ol]));
    return root;
  }

  function refreshPick(st) {
    const sel = document.getElementById("cg-pick");
    if (!sel) return;
    const g = st.group;
    const alive = g ? g.consumers.filter(function (c) { return c.alive; }).map(function (c) { return c.name; }) : [];
    const keep = sel.value;
    const now = Array.from(sel.options).map(function (o) { return o.value; });
    if (now.join() !== alive.join()) {
      sel.replaceChildren();
      alive.forEach(function (n) { sel.appendChild(h("option", { value: n }, n)); });
      if (alive.indexOf(keep) >= 0) sel.value = keep;
    }
    const form = document.getElementById("cg-form");
    if (form) form.querySelectorAll("button").forEach(function (b) { KV.setDisabled(b, !alive.length, KV.t("cg_no_consumer")); });
  }

  KV.register("consumer-group", {
    update: function (root, frame) {
      const st = frame.state || {};
      if (!("group" in st)) return;
      const fresh = draw(st);
      let cur = root.firstElementChild;
      if (!cur || frame.reset) { root.replaceChildren(fresh); } else { KV.morph(cur, fresh); }
      refreshPick(st);
    },
  });

  document.addEventListener("click", function (e) {
    const btn = e.target.closest && e.target.closest("#cg-form button[data-cmd]");
    if (btn) document.getElementById("cg-action").value = btn.dataset.cmd;
  }, true);
})();
