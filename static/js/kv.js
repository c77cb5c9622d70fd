/* kafkaviz shared helpers, loaded before every other script (window.KV):
 *   KV.data            the lesson's facts, from <script id="lesson-data"> (steps, tasks, quiz, broker names, ui words)
 *   KV.t(key, vars)    a UI word in the page's language, "{name}" placeholders filled from vars
 *   KV.el(tag, attrs, text)   an SVG element; KV.html(tag, attrs, text) an HTML element;
 *                      KV.tree(tag, attrs, children) an HTML element with children (attrs.text: its text)
 *   KV.keep(parent, id, make) the element with this id, created by make() and appended once (update by id)
 *   KV.morph(to, from) make element `to` look like a freshly drawn `from`, keeping elements by id
 *   KV.alias(b) / KV.brokerName(b)   "A" / "Broker 1 (A)" from the lesson's broker names
 *   KV.setDisabled(button, off, why) aria-disabled (stays focusable; the server explains refusals)
 *   KV.reducedMotion() prefers-reduced-motion
 *   KV.register(name, {update(element, frame)})  a diagram module (live.js calls it per frame)
 *   KV.on(type, fn)    the handler of one socket message type ("frame", "error", "ack", "roster", ...):
 *                      live.js dispatches every message through this one registry */
(function () {
  "use strict";
  const KV = (window.KV = window.KV || {});
  const SVGNS = "http://www.w3.org/2000/svg";
  KV.diagrams = KV.diagrams || {};
  KV.register = function (name, mod) { KV.diagrams[name] = mod; };
  KV.handlers = KV.handlers || {};
  KV.on = function (type, fn) { KV.handlers[type] = fn; };

  function loadData() {
    const node = document.getElementById("lesson-data");
    try { return node ? JSON.parse(node.textContent) : {}; } catch (_) { return {}; }
  }
  KV.data = loadData();
  if (!KV.data.ui) KV.data.ui = {};
  document.addEventListener("DOMContentLoaded", function () {
    KV.data = Object.assign(KV.data, loadData());
    if (!KV.data.ui) KV.data.ui = {};
  });

  KV.t = function (key, vars) {
    let text = (KV.data.ui && KV.data.ui[key]) || key;
    Object.keys(vars || {}).forEach(function (k) { text = text.split("{" + k + "}").join(String(vars[k])); });
    return text;
  };

  // A "style" goes through the CSSOM: the page's CSP (style-src 'self') refuses style
  // attributes set with setAttribute, which left every translated cell at the origin.
  function setAttr(node, k, v) {
    if (k === "style") node.style.cssText = v; else node.setAttribute(k, v);
  }
  KV.setAttr = setAttr;

  function build(node, attrs, text) {
    Object.keys(attrs || {}).forEach(function (k) {
      if (attrs[k] !== undefined && attrs[k] !== null) setAttr(node, k, attrs[k]);
    });
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }
  KV.el = function (tag, attrs, text) { return build(document.createElementNS(SVGNS, tag), attrs, text); };
  KV.html = function (tag, attrs, text) { return build(document.createElement(tag), attrs, text); };
  // An HTML element with children: attrs.text (if any) is its text, children (nodes or null) follow.
  KV.tree = function (tag, attrs, children) {
    const a = Object.assign({}, attrs);
    const text = a.text;
    delete a.text;
    const node = build(document.createElement(tag), a, text);
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  };

  KV.keep = function (parent, id, make) {
    let node = document.getElementById(id);
    if (!node) { node = make(); node.id = id; parent.appendChild(node); }
    return node;
  };

  // Make `to` look like `from` while keeping `to`'s elements: children are matched by id
  // (or, without ids, by position and tag), attributes and text updated in place. A diagram
  // can draw each frame from scratch and morph it in: elements persist, so CSS transitions
  // (a marker's style transform, a cell's fill) animate the change. Elements whose id
  // changes every frame (e.g. "...-<frame_seq>") are new each time, so their entry
  // animation plays.
  KV.morph = function (to, from) {
    if (to.nodeType === 3 || to.nodeType === 8) {
      if (to.nodeValue !== from.nodeValue) to.nodeValue = from.nodeValue;
      return;
    }
    Array.from(from.attributes).forEach(function (a) {
      if (to.getAttribute(a.name) !== a.value) setAttr(to, a.name, a.value);
    });
    Array.from(to.attributes).forEach(function (a) { if (!from.hasAttribute(a.name)) to.removeAttribute(a.name); });
    const byId = {};
    Array.from(to.childNodes).forEach(function (k) { if (k.id) byId[k.id] = k; });
    let i = 0;
    Array.from(from.childNodes).forEach(function (fk) {
      const here = to.childNodes[i] || null;
      let match = fk.id ? byId[fk.id] : null;
      if (!match && !fk.id && here && !here.id && here.nodeName === fk.nodeName) match = here;
      if (match) {
        if (match !== here) to.insertBefore(match, here);
        KV.morph(match, fk);
      } else {
        to.insertBefore(fk, here);
      }
      i++;
    });
    while (to.childNodes.length > i) to.removeChild(to.lastChild);
  };

  // Progress that survives reloads (and the sandbox being reclaimed): done try-its and
  // quiz answers, per lesson, in this browser only.
  KV.progress = {
    key: function () { return "kafkaviz:progress:" + (KV.data.slug || location.pathname); },
    load: function () {
      try { return JSON.parse(window.localStorage.getItem(KV.progress.key()) || "{}"); } catch (_) { return {}; }
    },
    save: function (update) {
      const p = Object.assign({ tasks: [], quiz: {} }, KV.progress.load());
      update(p);
      try { window.localStorage.setItem(KV.progress.key(), JSON.stringify(p)); } catch (_) { /* private mode */ }
    },
  };

  KV.alias = function (b) { return (KV.data.brokers || {})[String(b)] || ""; };
  KV.brokerName = function (b) {
    const a = KV.alias(b);
    return a ? KV.t("broker_n_alias", { b: b, alias: a }) : KV.t("broker_n", { b: b });
  };
  KV.shortName = function (b) { return KV.alias(b) || KV.t("broker_n", { b: b }); };

  KV.setDisabled = function (btn, off, why) {
    if (!btn) return;
    if (off) { btn.setAttribute("aria-disabled", "true"); if (why) btn.title = why; }
    else { btn.removeAttribute("aria-disabled"); btn.removeAttribute("title"); }
  };

  KV.reducedMotion = function () {
    return !!(window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches);
  };

  // Plotly (~490 KB compressed) is not part of a lesson page's first load: a chart asks for it
  // with KV.withPlotly(root, frame, draw), which says whether it is there. If not, the chart's
  // container (data-plotly: the script's URL, data-plotly-css: its stylesheet's) is watched,
  // and once it comes within a screen of the viewport the files are fetched; then draw(root,
  // latest frame) runs again. Pages whose charts the reader never scrolls to never load it.
  const plotlyWaiting = [];
  let plotlyAsked = false;
  function loadPlotly(root) {
    if (plotlyAsked) return;
    plotlyAsked = true;
    if (root.dataset.plotlyCss) {
      document.head.append(Object.assign(document.createElement("link"), { rel: "stylesheet", href: root.dataset.plotlyCss }));
    }
    // Plotly adds its rules to a <style id="plotly.js-style-global"> it creates, unless an
    // element with that id is marked "no-inline-styles": its rules are in the stylesheet
    // above, and the empty <style> it would add is refused by the CSP (a console error).
    if (!document.getElementById("plotly.js-style-global")) {
      document.head.append(Object.assign(document.createElement("meta"), { id: "plotly.js-style-global", className: "no-inline-styles" }));
    }
    const script = Object.assign(document.createElement("script"), { src: root.dataset.plotly, async: true });
    script.addEventListener("load", function () { plotlyWaiting.splice(0).forEach(function (f) { f(); }); });
    script.addEventListener("error", function () { plotlyAsked = false; });    // try again at the next frame
    document.head.append(script);
  }
  KV.withPlotly = function (root, frame, draw) {
    if (window.Plotly) return true;
    root._kvPlotlyFrame = frame;
    if (!root.dataset.plotly) return false;
    if (!root._kvPlotlyWaits) {
      root._kvPlotlyWaits = true;
      plotlyWaiting.push(function () { draw(root, root._kvPlotlyFrame); });
      if ("IntersectionObserver" in window) {
        const seen = new IntersectionObserver(function (entries) {
          if (entries.some(function (e) { return e.isIntersecting; })) {
            seen.disconnect();
            root._kvPlotlySeen = true;
            loadPlotly(root);
          }
        }, { rootMargin: "100% 0px" });
        seen.observe(root);
      } else {
        root._kvPlotlySeen = true;
        loadPlotly(root);
      }
    } else if (plotlyAsked === false && root._kvPlotlySeen) {
      loadPlotly(root);
    }
    return false;
  };

  // The stage's main picture fits the first screen (issue 17), at 1366×800, 1280×720 and on a
  // phone: after each frame, a picture that runs past the window's bottom gives up the
  // excess -- an SVG marked .stage-fit scales down (to no less than 60 % of the size it is
  // drawn at full scale, so its text stays readable), a list or table marked .stage-fit
  // scrolls in a shorter box (never under 4.5 em, 3.5 em on a phone). It runs as the stage's
  // last diagram, so it measures what the stage's diagrams just drew.
  // The main picture: the stage's first diagram, or the part of it marked data-stage-main.
  KV.stageMain = function () {
    const d = document.querySelector("#stage .stage-slot-1 [data-diagram]");
    return d && (d.querySelector("[data-stage-main]") || d);
  };
  // What must be on the first screen: the main picture and, where the stage names them
  // (#stage[data-stage-also], a selector: lesson 13's lag rows), the parts the step's sentence
  // speaks about beside it.
  function stageAlso() {
    const stage = document.getElementById("stage"), sel = stage && stage.getAttribute("data-stage-also");
    return sel ? Array.prototype.slice.call(stage.querySelectorAll(sel)) : [];
  }
  KV.stageBottom = function () {
    const main = KV.stageMain();
    if (!main) return 0;
    let bottom = main.getBoundingClientRect().bottom;
    stageAlso().forEach(function (n) {
      if (n.getClientRects().length) bottom = Math.max(bottom, n.getBoundingClientRect().bottom);
    });
    return bottom + window.scrollY;
  };
  // An SVG's scale now (drawn width over its viewBox's): its floor is 60 % of full scale, or
  // what its data-fit-min says (a picture whose small print is already small).
  function svgFloor(p, h) {
    const vb = p.viewBox && p.viewBox.baseVal, w = p.getBoundingClientRect().width;
    const scale = vb && vb.width && w ? w / vb.width : 1;
    const min = Math.max(0.6, Number(p.getAttribute("data-fit-min")) || 0);
    return Math.min(h, h * min / Math.max(scale, min));
  }
  // A part marked data-fit-rows (a selector of its rows) gives up height on a phone by
  // showing fewer rows, never by scrolling in a box of its own: the rows the step is about
  // (its rows marked .fit-focus; else its newest, with data-fit-rows-end; else its first) and their
  // neighbours, at least data-fit-rows-min of them (2). With data-fit-more, a button after it
  // says how many rows show and shows them all (the page then scrolls as any page does).
  function rowsOf(p) { return Array.prototype.slice.call(p.querySelectorAll(p.getAttribute("data-fit-rows"))); }
  function showRows(p, k) {
    const rows = rowsOf(p), n = rows.length;
    let a = -1, b = -1;
    rows.forEach(function (r, i) { if (r.classList.contains("fit-focus")) { if (a < 0) a = i; b = i; } });
    if (a < 0) { a = b = p.hasAttribute("data-fit-rows-end") ? n - 1 : 0; }
    k = Math.max(1, Math.min(n, k));
    // The rows before the focus first (what led to it: the index entry a scan started from).
    const start = Math.max(0, Math.min(n - k, a - Math.ceil(Math.max(0, k - (b - a + 1)) / 2)));
    rows.forEach(function (r, i) { r.toggleAttribute("data-fit-off", i < start || i >= start + k); });
    return { shown: k, total: n };
  }
  function moreButton(p, shown, total) {
    if (!p.hasAttribute("data-fit-more")) return;
    let b = p.nextElementSibling;
    if (!b || !b.classList.contains("fit-more")) {
      b = KV.html("button", { type: "button", class: "linklike fit-more" });
      b.addEventListener("click", function () { p.toggleAttribute("data-fit-all"); fitStage(); });
      p.after(b);
    }
    const all = p.hasAttribute("data-fit-all");
    b.hidden = !all && shown >= total;
    b.textContent = all ? KV.t("fit_fewer") : KV.t("fit_more", { shown: shown, total: total });
    b.setAttribute("aria-expanded", String(all));
  }
  function fitStage() {
    const main = KV.stageMain();
    if (!main) return;
    const stage = document.getElementById("stage");
    const also = stageAlso();
    const phone = window.innerWidth < 600;
    const parts = Array.prototype.slice.call(stage.querySelectorAll(".stage-fit")).filter(function (p) {
      return main.contains(p) || also.some(function (a) { return a.contains(p); });
    });
    const byRows = function (p) { return phone && p.hasAttribute("data-fit-rows"); };
    const kept = parts.map(function (p) { return p.scrollTop; });
    parts.forEach(function (p) {
      p.style.maxHeight = "";
      rowsOf(p).forEach(function (r) { r.removeAttribute("data-fit-off"); });
    });
    // Rows shown where the window is not a phone's, or where the learner asked for them all.
    stage.querySelectorAll(".fit-more").forEach(function (b) {
      const p = b.previousElementSibling;
      if (!p || !byRows(p)) b.hidden = true;
      else if (p.hasAttribute("data-fit-all")) moreButton(p, 0, 0);
    });
    const fitting = parts.filter(function (p) { return !(byRows(p) && p.hasAttribute("data-fit-all")); });
    if (!fitting.length) return;
    const over = function () { return KV.stageBottom() - window.innerHeight + 8; };
    const done = function () {
      fitting.forEach(function (p) { if (byRows(p)) { const r = rowsOf(p); moreButton(p, r.filter(function (x) { return !x.hasAttribute("data-fit-off"); }).length, r.length); } });
    };
    if (over() <= 0) { done(); return; }
    const em = parseFloat(getComputedStyle(main).fontSize) || 16;
    const tall = fitting.map(function (p) {
      if (byRows(p)) {
        const n = rowsOf(p).length;
        return { p: p, rows: n, floor: Math.min(n, Number(p.getAttribute("data-fit-rows-min")) || 2) };
      }
      const h = p.getBoundingClientRect().height;
      return { p: p, h: h, floor: p.tagName.toLowerCase() === "svg" ? svgFloor(p, h) : Math.min(h, (phone ? 3.5 : 4.5) * em) };
    });
    // Every part gives up the same share of what it can (parts side by side shrink together):
    // the largest share f in [0, 1] kept (1: its drawn size) that fits, by bisection.
    const apply = function (f) {
      tall.forEach(function (t) {
        if (t.rows !== undefined) { showRows(t.p, Math.round(t.floor + (t.rows - t.floor) * f)); return; }
        const v = t.floor + (t.h - t.floor) * f;
        t.p.style.maxHeight = v < t.h - 1 ? Math.floor(v) + "px" : "";
      });
    };
    let lo = 0, hi = 1;
    apply(0);
    if (over() <= 0) {
      for (let i = 0; i < 7; i++) { const mid = (lo + hi) / 2; apply(mid); if (over() <= 0) lo = mid; else hi = mid; }
      apply(lo);
    }
    done();
    // A shorter box keeps its place; one marked data-fit-end shows its newest lines.
    parts.forEach(function (p, i) { p.scrollTop = p.hasAttribute("data-fit-end") ? p.scrollHeight : kept[i]; });
  }
  KV.fitStage = fitStage;
  // On a phone, parts of the main picture marked data-stage-tab (siblings) share one place:
  // a tab list above them picks which one shows, and a step that changes one of them shows it
  // (the part the step's sentence speaks about). Wider windows show them all (the tab list is
  // hidden by CSS, and the parts are plain sections again). A tab's name is its part's label
  // (or heading). ARIA's tabs pattern: role tablist/tab/tabpanel, aria-selected, one tab in the
  // Tab order, ←/→ (and Home/End) move between tabs and show the one reached.
  let tabSeq = 0;
  const TABS_SHOWN = "(max-width: 600px), (min-width: 1001px) and (max-height: 760px)";
  function tabsShown() { return !!(window.matchMedia && window.matchMedia(TABS_SHOWN).matches); }
  function stageTabs(jumped) {
    const groups = new Map();
    document.querySelectorAll("#stage [data-stage-tab]").forEach(function (p) {
      if (!groups.has(p.parentNode)) groups.set(p.parentNode, []);
      groups.get(p.parentNode).push(p);
    });
    const shown = tabsShown();
    groups.forEach(function (panels, parent) {
      let bar = parent.querySelector(":scope > .stage-tabs");
      // The part the current step is about, where its diagram says (data-stage-now): a page
      // opened at a step (a snapshot), Back or the scrubber shows it, as walking
      // to the step would have; else the part that changed.
      const now = panels.filter(function (p) { return p.hasAttribute("data-stage-now"); })[0];
      const pick = function (chosen) {
        panels.forEach(function (p, i) {
          const on = p === chosen, tab = bar.children[i];
          p.toggleAttribute("data-tab-off", !on);
          tab.setAttribute("aria-selected", String(on));
          tab.tabIndex = on ? 0 : -1;
        });
      };
      if (!bar) {
        bar = KV.html("div", { class: "stage-tabs", role: "tablist", "aria-label": KV.t("stage_tabs") });
        panels.forEach(function (p) {
          const head = p.querySelector("h2, h3, h4"), n = ++tabSeq;
          if (!p.id) p.id = "stage-panel-" + n;
          const b = KV.html("button", { type: "button", class: "secondary stage-tab", role: "tab", id: "stage-tab-" + n,
            "aria-selected": "false", "aria-controls": p.id, tabindex: "-1" },
            p.getAttribute("aria-label") || (head ? head.textContent : ""));
          b.addEventListener("click", function () { pick(p); fitStage(); });
          bar.append(b);
        });
        bar.addEventListener("keydown", function (e) {
          const tabs = Array.prototype.slice.call(bar.children), i = tabs.indexOf(e.target);
          if (i < 0 || e.altKey || e.ctrlKey || e.metaKey) return;
          const to = { ArrowRight: i + 1, ArrowDown: i + 1, ArrowLeft: i - 1, ArrowUp: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
          if (to === undefined) return;
          // The page's own ←/→ (Back, Step) and Home/End (first, last step) wait: this key is the tab list's.
          e.preventDefault();
          e.stopPropagation();
          const j = (to + tabs.length) % tabs.length;
          pick(panels[j]);
          tabs[j].focus();
          fitStage();
        });
        parent.insertBefore(bar, panels[0]);
        pick(now || panels[0]);
      }
      // Tab panels only while the tab list shows; otherwise every part is a section of its own.
      panels.forEach(function (p, i) {
        if (shown) { p.setAttribute("role", "tabpanel"); p.setAttribute("aria-labelledby", bar.children[i].id); }
        else if (p.getAttribute("role") === "tabpanel") { p.removeAttribute("role"); p.removeAttribute("aria-labelledby"); }
      });
      const changed = panels.filter(function (p) {
        const was = p._kvTabText, now = p.textContent;
        p._kvTabText = now;
        return was !== undefined && was !== now;
      });
      if (jumped && now) pick(now);
      else if (changed.length) pick(changed[changed.length - 1]);
    });
  }
  KV.stageTabs = stageTabs;
  // Refit whenever the step's sentence or the picture changes size (the sentence is written
  // after the diagrams draw); the observer runs after layout and before paint, so a picture
  // is never seen past the window's bottom. Fitting twice gives the same sizes: no loop.
  // A frame that lands on a step other than by one Step forward: a snapshot (a page opened
  // or reopened), a reset, Back, the scrubber.
  let tabStep;
  KV.register("stage-fit", { update: function (root, frame) {
    const run = frame && frame.state && frame.state.run, at = run ? run.step : undefined;
    const jumped = !!(frame && (frame.snapshot || frame.reset)) || (at !== undefined && tabStep !== undefined && at !== tabStep && at !== tabStep + 1);
    if (at !== undefined) tabStep = at;
    stageTabs(jumped);
    fitStage();
    if (KV.stageFitWatch || !window.ResizeObserver) return;
    // The diagram's own element (it stays while a diagram redraws what is inside it).
    const main = document.querySelector("#stage .stage-slot-1 [data-diagram]"), say = document.getElementById("narration");
    if (!main) return;
    KV.stageFitWatch = new ResizeObserver(fitStage);
    [main, say].forEach(function (n) { if (n) KV.stageFitWatch.observe(n); });
  } });
  window.addEventListener("resize", function () { stageTabs(); fitStage(); });

  // A form field has the focus: keys belong to it, not to the page's shortcuts.
  KV.typing = function (t) {
    return !!t && (t.tagName === "INPUT" && t.type !== "range" && t.type !== "radio" && t.type !== "checkbox" ||
      t.tagName === "SELECT" || t.tagName === "TEXTAREA" || t.isContentEditable);
  };
})();
