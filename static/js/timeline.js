/* Timeline: every engine event as one readable line, newest first. It is also the
 * accessible alternative to the diagrams (role=log is not used: it would read every
 * line aloud; important events are announced separately by live.js). */
(function () {
  "use strict";
  const MAX_ITEMS = 300;

  function item(ev) {
    const li = document.createElement("li");
    li.className = "tl-item tl-" + ev.kind;
    li.dataset.seq = ev.seq;
    const t = document.createElement("span");
    t.className = "tl-time";
    t.textContent = KV.secs(ev.time_ms, 1);
    const k = document.createElement("span");
    k.className = "tl-kind";
    k.lang = "en";                 // the engine's name for the event: an identifier, said in English
    k.translate = false;
    k.textContent = ev.kind.replace(/_/g, " ");
    const text = document.createElement("span");
    text.className = "tl-text";
    text.textContent = ev.text;
    li.append(t, " ", k, " ", text);
    return li;
  }

  function note(text) {
    const li = document.createElement("li");
    li.className = "tl-item tl-note";
    li.textContent = text;
    return li;
  }

  KV.register("timeline", {
    update: function (ol, frame) {
      if (frame.reset || frame.snapshot) { ol.replaceChildren(); ol.dataset.lastSeq = "0"; }
      let last = Number(ol.dataset.lastSeq || 0);
      const events = frame.events || [];
      if (frame.skipped > 0) {
        ol.prepend(note(KV.t("skipped", { n: frame.skipped })));
      }
      events.forEach(function (ev) {
        if (ev.kind === "run_moved") {
          if (ev.how !== "back") return;
          // A rewind: the engine is as it was at last_seq; later lines are no longer true.
          Array.from(ol.querySelectorAll("li[data-seq]")).forEach(function (li) {
            if (Number(li.dataset.seq) > ev.last_seq) li.remove();
          });
          last = ev.last_seq;
          const n = note(ev.text);
          ol.prepend(n);
          return;
        }
        if (ev.seq <= last) return;
        if (last > 0 && ev.seq > last + 1 && !frame.skipped) {
          ol.prepend(note(KV.t("behind", { n: ev.seq - last - 1 })));
        }
        ol.prepend(item(ev));
        last = ev.seq;
      });
      ol.dataset.lastSeq = String(last);
      while (ol.children.length > MAX_ITEMS) ol.removeChild(ol.lastChild);
    },
  });
})();
