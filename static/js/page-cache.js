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
        h("span", { class: "pc-key durable", text: "on disk (fsync'd or written back)" }),
        h("span", { class: "pc-key dirty", text: "page cache only" }),
        h("span", { class: "pc-key sendfile", text: "last fetch (sendfile range)" }),
      ]),
      h("div", { class: "pc-pages", id: "pc-pages", role: "list", "aria-label": "The .log file, one row per 4 KiB page" }),
      h("table", { class: "pc-files" }, [
        h("caption", { text: "Files of the partition directory" }),
        h("thead", {}, [h("tr", {}, [h("th", { scope: "col", text: "file" }), h("th", { scope: "col", text: "size" }),
          h("th", { scope: "col", text: "on disk" }), h("th", { scope: "col", text: "page cache only" })])]),
        h("tbody", { id: "pc-file-rows" }),
      ]),
      h("div", { class: "pc-report", id: "pc-report", "aria-live": "polite" }),
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
      const state = used === 0 ? "empty" : onDisk >= used ? "on disk" : onDisk > 0 ? "partly on disk" : "page cache only";
      const row = h("div", { class: "pc-page", role: "listitem", id: "pc-page-" + i,
        "aria-label": "page " + i + " (bytes " + start + "–" + (end - 1) + "): " + state }, [
        h("span", { class: "pc-page-label", text: "page " + i + " · " + state }),
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
          title: "offset " + b[1] + ": bytes " + b[0] + "–" + (b[0] + b[3] - 1) + (torn ? " (only partly on disk)" : ""),
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
    lines.push((c.power_loss ? "⚡ Power loss" : "✕ Process killed") + " at " + (c.time_ms / 1000).toFixed(1) + " s: " +
      (c.lost_files.length ? c.lost_files.map(function (f) { return f.file + " " + fmt(f.size_before) + " → " + fmt(f.size_after) + " B"; }).join(", ")
        : "the page cache survived, no byte lost") + ".");
    if (c.recovery_cut) lines.push("Recovery found a torn batch and cut " + String(c.recovery_cut.segment).padStart(20, "0") +
      ".log from " + fmt(c.recovery_cut.from) + " to " + fmt(c.recovery_cut.to) + " B: the end of the last whole batch.");
    if (c.leo_after === null) lines.push("The broker is down. Restart it to run recovery.");
    else lines.push("Log end offset " + c.leo_before + " → " + c.leo_after + ": " +
      (c.lost_records ? c.lost_records + " acknowledged record(s) lost." : "no acknowledged record lost."));
    lines.forEach(function (t, i) { el.appendChild(h("p", { class: i === 0 ? "pc-crash" : "", text: t })); });
  }

  KV.register("page-cache", {
    update: function (root, frame) {
      const st = frame.state || {};
      if (!st.files) return;
      ensure(root);
      const status = document.getElementById("pc-status");
      status.textContent = st.alive ? "● Broker running (start #" + st.incarnation + ")" : "✕ Broker down";
      status.dataset.state = st.alive ? "up" : "down";
      document.getElementById("pc-offsets").textContent = st.log
        ? "Log end offset " + st.log.log_end_offset + " · recovery point " + st.log.recovery_point +
          " (everything below it is fsync'd) · flush.messages " + (st.flush_messages || "never") + " · flush.ms " + (st.flush_ms || "never")
        : "";
      drawPages(st);
      drawFiles(st);
      drawReport(st);
      document.getElementById("pc-fetch").textContent = st.fetch
        ? "Last fetch from offset " + st.fetch.offset + ": sendfile(" + st.fetch.file + ", position " + st.fetch.position + ", " +
          fmt(st.fetch.length) + " bytes) — " + st.fetch.batches + " batch(es) copied by the kernel from the page cache to the socket, never into the broker's memory."
        : "";
    },
  });
})();
