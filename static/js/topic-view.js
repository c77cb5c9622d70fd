/* Topic diagram (lesson 1): the producer's latest placements, each partition as a row of
 * offset cells (key and value inside), and consumers A and B with the records in the
 * order each received them and their next offset per partition. Cells are keyed by id
 * (partition + offset), so a new record slides in and nothing else is redrawn. Keys get
 * one of a few colours AND their name printed in the cell; keyless records are dashed. */
(function () {
  "use strict";
  const KEY_CLASSES = 6;

  const h = KV.tree;
  function keyClass(key) {
    if (key === null || key === undefined) return "k-none";
    let n = 0;
    for (let i = 0; i < key.length; i++) n = (n * 31 + key.charCodeAt(i)) >>> 0;
    return "k-" + (n % KEY_CLASSES);
  }
  function ruleText(pl) {
    if (pl.rule === "key") return KV.t("tv_rule_key", { key: pl.key, hash: pl.hash, n: pl.partitions, p: pl.partition });
    if (pl.rule === "explicit") return KV.t("tv_rule_explicit", { p: pl.partition });
    if (pl.rule === "sticky-switch") return KV.t("tv_rule_switch", { from: pl.switched_from, p: pl.partition });
    return KV.t("tv_rule_sticky", { p: pl.partition });
  }

  function ensure(root, st) {
    if (root.querySelector(".tv")) return;
    const parts = st.partitions.map(function (p) {
      return h("div", { class: "tv-part", id: "tv-part-" + p.partition }, [
        h("div", { class: "tv-part-head" }, [
          h("strong", { text: p.dir }),
          h("span", { class: "tv-pos", id: "tv-pos-" + p.partition }),
        ]),
        h("ol", { class: "tv-cells", id: "tv-cells-" + p.partition, "aria-label": KV.t("tv_records_of", { p: p.partition }) }),
      ]);
    });
    const consumers = st.consumers.map(function (c) {
      return h("div", { class: "tv-consumer", id: "tv-consumer-" + c.name }, [
        h("div", { class: "tv-part-head" }, [
          h("strong", { text: KV.t("tv_consumer", { name: c.name }) }),
          h("span", { class: "tv-visit", text: KV.t("tv_visits", { list: c.assignment.join(", ") }) }),
        ]),
        h("ol", { class: "tv-got stage-fit", tabindex: "0", id: "tv-got-" + c.name, "aria-label": KV.t("tv_received", { name: c.name }) }),
      ]);
    });
    root.appendChild(h("div", { class: "tv" }, [
      h("section", { class: "tv-producer", "aria-label": KV.t("tv_producer"), "data-stage-tab": "" }, [
        h("h3", { text: KV.t("tv_producer_head") }),
        h("p", { class: "tv-sticky", id: "tv-sticky" }),
        // Scrolls on a wider short stage (reachable by keyboard); on a phone it shows its newest
        // rows (the first: the list is newest first) and a button for the rest (KV.fitStage).
        h("ol", { class: "tv-placements stage-fit", id: "tv-placements", reversed: "", tabindex: "0", "aria-label": KV.t("tv_producer_head"),
          "data-fit-rows": "li", "data-fit-more": "" }),
      ]),
      h("section", { class: "tv-parts", "aria-label": KV.t("tv_partitions") }, [h("h3", { text: KV.t("tv_topic", { topic: st.topic }) }) ].concat(parts)),
      h("section", { class: "tv-consumers", "aria-label": KV.t("cg_consumers"), "data-stage-tab": "" }, [h("h3", { text: KV.t("cg_consumers") })].concat(consumers).concat([
        h("p", { class: "tv-verdict", id: "tv-verdict", role: "status" }),
      ])),
    ]));
  }

  function drawPlacements(st) {
    const ol = document.getElementById("tv-placements");
    const shown = st.placements.slice(-8).reverse();
    const want = shown.map(function (pl) { return "tv-pl-" + pl.seq; });
    Array.from(ol.children).forEach(function (li) { if (want.indexOf(li.id) < 0) li.remove(); });
    shown.forEach(function (pl, i) {
      let li = document.getElementById("tv-pl-" + pl.seq);
      if (!li) {
        li = h("li", { id: "tv-pl-" + pl.seq, class: "tv-pl " + keyClass(pl.key) + (KV.reducedMotion() ? "" : " is-new") }, [
          h("span", { class: "tv-chip", text: pl.key !== null ? KV.t("tv_chip_key", { value: pl.value, key: pl.key }) : KV.t("tv_chip_no_key", { value: pl.value }) }),
          h("span", { class: "tv-arrow", text: " → p" + pl.partition }),
          h("span", { class: "tv-rule", text: " (" + ruleText(pl) + ")" }),
        ]);
        window.setTimeout(function () { li.classList.remove("is-new"); }, 600);
      }
      if (ol.children[i] !== li) ol.insertBefore(li, ol.children[i] || null);
    });
    document.getElementById("tv-sticky").textContent = st.sticky_partition === null
      ? KV.t("tv_no_keyless", { size: st.batch_size })
      : KV.t("tv_sticky", { p: st.sticky_partition, used: st.sticky_bytes, size: st.batch_size });
  }

  function drawPartitions(st) {
    st.partitions.forEach(function (p) {
      const ol = document.getElementById("tv-cells-" + p.partition);
      const want = new Set(p.records.map(function (r) { return "tv-r-" + p.partition + "-" + r[0]; }));
      Array.from(ol.children).forEach(function (li) { if (!want.has(li.id)) li.remove(); });
      p.records.forEach(function (r) {
        const id = "tv-r-" + p.partition + "-" + r[0];
        if (document.getElementById(id)) return;
        const li = h("li", { id: id, class: "tv-cell " + keyClass(r[1]) + (KV.reducedMotion() ? "" : " is-new"),
          title: r[1] !== null ? KV.t("tv_cell_title", { offset: r[0], key: r[1], value: r[2] }) : KV.t("tv_cell_title_no_key", { offset: r[0], value: r[2] }) }, [
          h("span", { class: "tv-off", text: r[0] }),
          h("span", { class: "tv-key", text: r[1] !== null ? r[1] : "—" }),
          h("span", { class: "tv-val", text: r[2].replace(/^order-/, "#") }),
        ]);
        ol.appendChild(li);
        window.setTimeout(function () { li.classList.remove("is-new"); }, 600);
      });
      const pos = st.consumers.map(function (c) { return KV.t("tv_next", { name: c.name, offset: c.positions[String(p.partition)] }); });
      document.getElementById("tv-pos-" + p.partition).textContent =
        "LEO " + p.log_end_offset + " · " + pos.join(" · ");
      st.consumers.forEach(function (c) {
        const next = c.positions[String(p.partition)];
        Array.from(ol.children).forEach(function (li) {
          const off = Number(li.id.split("-").pop());
          li.classList.toggle("read-" + c.name, off < next);
        });
      });
    });
  }

  function drawConsumers(st) {
    st.consumers.forEach(function (c) {
      const ol = document.getElementById("tv-got-" + c.name);
      if (ol.dataset.count === String(c.received_count)) return;
      ol.dataset.count = String(c.received_count);
      ol.textContent = "";
      c.received.forEach(function (r) {
        ol.appendChild(h("li", { class: "tv-cell small " + keyClass(r[2]), title: KV.t("tv_got_title", { p: r[0], offset: r[1] }) }, [
          h("span", { class: "tv-off", text: "p" + r[0] + "@" + r[1] }),
          h("span", { class: "tv-val", text: r[3].replace(/^order-/, "#") }),
        ]));
      });
    });
    const a = st.consumers[0].received, b = st.consumers[1].received;
    const v = document.getElementById("tv-verdict");
    if (!a.length || !b.length) { v.textContent = KV.t("tv_poll"); return; }
    const samePer = [0, 1, 2].every(function (p) {
      const fa = a.filter(function (r) { return r[0] === p; }).map(function (r) { return r[1]; });
      const fb = b.filter(function (r) { return r[0] === p; }).map(function (r) { return r[1]; });
      const n = Math.min(fa.length, fb.length);
      return fa.slice(0, n).join() === fb.slice(0, n).join();
    });
    v.textContent = (samePer ? KV.t("tv_same_order") + " " : "") +
      KV.t(st.orders_differ ? "tv_orders_differ" : "tv_compare_later");
  }

  // The part the current step is about, data-stage-now: the producer's if the step placed
  // records (their events fall in the step's range of event numbers, lo < seq <= hi), else
  // the consumers'. A page opened (or reopened) at this step shows that part's tab on a phone,
  // as walking to the step does (KV.stageTabs).
  function markNow(root, st) {
    const run = st.run || {}, seqs = run.step_seqs || [];
    const lo = run.step > 0 ? seqs[run.step - 1] : undefined, hi = seqs[run.step];
    const placed = lo !== undefined && st.placements.some(function (pl) { return pl.seq > lo && (hi === undefined || pl.seq <= hi); });
    root.querySelector(".tv-producer").toggleAttribute("data-stage-now", placed);
    root.querySelector(".tv-consumers").toggleAttribute("data-stage-now", lo !== undefined && !placed);
  }

  KV.register("topic-view", {
    update: function (root, frame) {
      const st = frame.state || {};
      if (!st.partitions || !st.consumers) return;
      ensure(root, st);
      drawPlacements(st);
      drawPartitions(st);
      drawConsumers(st);
      markNow(root, st);
    },
  });
})();
