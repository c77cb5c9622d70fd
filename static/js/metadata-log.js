/* The metadata log (lesson 17): __cluster_metadata as the engine's most advanced running voter
 * holds it -- one cell per record (offset, Kafka's record type, the writing leader's epoch),
 * committed cells solid and the rest dashed, the quorum's HW marked -- and, under it, each
 * node's applied offset (controllers and brokers), straight from state.quorum. Records that
 * arrived in this step are marked "new" (text, not only colour). */
(function () {
  "use strict";
  const seen = { runId: null, end: null };
  // Short names for a narrow cell; the full type is the cell's title.
  const SHORT = { TopicRecord: "Topic", PartitionRecord: "Partition", PartitionChangeRecord: "PartitionChange",
    RegisterBrokerRecord: "RegisterBroker", UnfenceBrokerRecord: "UnfenceBroker", FenceBrokerRecord: "FenceBroker",
    ConfigRecord: "Config", FeatureLevelRecord: "FeatureLevel", LeaderChangeMessage: "LeaderChange",
    ProducerIdsRecord: "ProducerIds", KRaftVersionRecord: "KRaftVersion", VotersRecord: "Voters" };

  function nodeName(id, q) {
    return (q.voters || []).indexOf(Number(id)) >= 0 && q.mode === "dedicated" ? KV.t("ml_controller_n", { n: id }) : KV.brokerName(Number(id));
  }

  KV.register("metadata-log", {
    update: function (container, frame) {
      const st = frame.state || {};
      const q = st.quorum;
      container.replaceChildren();
      if (!q) { container.append(KV.html("p", { class: "note" }, KV.t("ml_none"))); return; }
      if (seen.runId !== st.run_id) { seen.runId = st.run_id; seen.end = null; }
      const before = seen.end;
      const log = q.log || { records: [] };
      const head = KV.html("p", { class: "ml-head" },
        KV.t("ml_head", { node: log.node === null ? "—" : nodeName(log.node, q), end: log.end, hw: q.high_watermark,
          epoch: q.epoch, active: q.active === null ? KV.t("ml_no_active") : nodeName(q.active, q) }));
      // The log start moves to a snapshot (<offset>-<epoch>.checkpoint) when the cleaner deletes what is before it.
      const start = KV.html("p", { class: "ml-start" }, KV.t("ml_start", { start: log.start || 0,
        snapshots: (log.snapshots || []).length ? log.snapshots.join(", ") : KV.t("ml_no_snapshots") }));
      const list = KV.html("ol", { class: "ml-cells", "aria-label": KV.t("ml_cells") });
      if (log.older) list.append(KV.html("li", { class: "ml-more" }, "…" + log.older));
      (log.records || []).forEach(function (r) {
        const fresh = before !== null && r.offset >= before;
        const li = KV.html("li", { class: "ml-cell epoch-" + (r.epoch % 4) + (r.committed ? " ml-committed" : " ml-uncommitted") + (fresh ? " ml-new" : ""),
          title: r.type + " · " + KV.t("ml_offset") + " " + r.offset + " · e" + r.epoch + " · " + (r.committed ? KV.t("ml_committed") : KV.t("ml_not_committed")) });
        li.append(KV.html("span", { class: "ml-off" }, String(r.offset) + (fresh ? " " + KV.t("new") : "")),
          KV.html("span", { class: "ml-type" }, SHORT[r.type] || r.type), KV.html("span", { class: "ml-ep" }, "e" + r.epoch));
        list.append(li);
        if (r.offset === q.high_watermark - 1) list.append(KV.html("li", { class: "ml-hw", "aria-label": "HW " + q.high_watermark }, "▲HW " + q.high_watermark));
      });
      seen.end = log.end;
      const applied = KV.html("ul", { class: "ml-applied", "aria-label": KV.t("ml_applied_title") });
      Object.keys(q.applied || {}).map(Number).sort(function (a, b) { return b >= 100 && a < 100 ? 1 : a >= 100 && b < 100 ? -1 : a - b; }).forEach(function (id) {
        const v = q.applied[String(id)];
        const ctl = (q.controllers || []).find(function (c) { return c.node === id; });
        const role = ctl && ctl.alive ? KV.t("ml_state_" + ctl.state) + " e" + ctl.epoch : "";
        applied.append(KV.html("li", { class: "ml-node" + (v === null ? " ml-down" : "") },
          nodeName(id, q) + (role ? " (" + role + ")" : "") + ": " + (v === null ? KV.t("down") : KV.t("ml_applied", { n: v }))));
      });
      container.append(head, start, list, applied);
    },
  });
})();
