/* kafkaviz rooms: the extra parts of a room's pages (docs/web.md "Rooms").
 * - student page: who you are, whether you have control (the server pushes "control"
 *   when it changes), and "fork": share the room's run, then open it in your own lesson sandbox;
 * - presenter page: fault presets (data from kafkaviz/classroom/presets.py; roles such as
 *   $leader filled from the last frame), the roster with grant / take back and remove;
 * - a lesson page of an instructor: "Open a room from here" posts the current run.
 * The server decides who may do what; this file only shows it. */
(function () {
  "use strict";
  const KV = window.KV;
  const $ = function (id) { return document.getElementById(id); };
  let RD = {};
  function t(key, vars) {
    let text = (RD.ui && RD.ui[key]) || key;
    Object.keys(vars || {}).forEach(function (k) { text = text.split("{" + k + "}").join(String(vars[k])); });
    return text;
  }
  function send(msg) {
    if (!KV.socket) return false;
    KV.socket.send(JSON.stringify(msg));
    return true;
  }
  KV.onAck = KV.onAck || {};

  // ---- roster ----------------------------------------------------------------------
  let hadControl = null;
  function showControl(you) {
    const box = $("room-banner"), label = $("room-control");
    if (!box || !label) return;
    const granted = !!(you && you.granted);
    box.dataset.control = granted ? "granted" : "watching";
    label.textContent = "";
    label.appendChild(KV.html("span", { "aria-hidden": "true" }, granted ? "◆ " : "◇ "));
    label.appendChild(document.createTextNode(granted ? t("in_control") : t("watching")));
    if (hadControl !== null && hadControl !== granted) KV.announce(granted ? t("granted_now") : t("revoked_now"));
    hadControl = granted;
  }
  function showRoster(msg) {
    const list = $("roster");
    if (!list) return;
    const members = msg.members || [];
    list.textContent = "";
    members.forEach(function (m) {
      const state = KV.html("span", { class: "roster-state" },
        (m.connected ? "● " + t("online") : "○ " + t("offline")) + (m.granted ? " · ◆ " + t("has_control") : ""));
      const label = m.granted ? t("revoke") : t("grant");
      const btn = KV.html("button", { type: "button", class: "secondary roster-toggle", "data-member": String(m.id),
        "aria-label": label + ": " + m.name }, label);
      btn.addEventListener("click", function () { send({ type: m.granted ? "revoke" : "grant", member: m.id }); });
      // The server checks that this comes from the instructor; the student's sockets are closed there.
      const remove = KV.html("button", { type: "button", class: "secondary roster-remove", "data-member": String(m.id),
        "aria-label": t("remove") + ": " + m.name }, t("remove"));
      remove.addEventListener("click", function () {
        if (window.confirm(t("remove_confirm", { name: m.name }))) send({ type: "remove", member: m.id });
      });
      list.appendChild(KV.tree("li", { class: "roster-member" + (m.connected ? " online" : " offline"),
        "data-granted": m.granted ? "true" : "false" }, [KV.html("span", { class: "roster-name" }, m.name), state, btn,
        remove]));
    });
    $("roster-count").textContent = String(members.filter(function (m) { return m.connected; }).length);
    const empty = $("roster-empty");
    if (empty) empty.hidden = members.length > 0;
  }
  KV.on("roster", showRoster);                                            // instructor's sockets only
  KV.on("control", function (msg) { showControl({ granted: msg.granted }); });   // a student's own

  // ---- presets (presenter) ----------------------------------------------------------
  function role(name, state) {
    const part = state.partition || {};
    if (name === "$leader") return part.leader;
    if (name === "$controller") return (state.controller || {}).active;
    if (name === "$follower") {
      const alive = {};
      (state.brokers || []).forEach(function (b) { alive[b.id] = b.alive; });
      return (part.replicas || []).find(function (r) { return r !== part.leader && alive[r]; });
    }
    return undefined;
  }
  function runPreset(preset) {
    const err = $("preset-error");
    if (err) err.textContent = "";
    const state = KV.lastFrame && KV.lastFrame.state;
    if (!state) { if (err) err.textContent = t("no_frame"); return; }
    const cmds = [];
    for (const cmd of preset.do) {
      const out = {};
      for (const k of Object.keys(cmd)) {
        const v = cmd[k];
        if (typeof v === "string" && v.charAt(0) === "$") {
          const who = role(v, state);
          if (who === undefined || who === null || who < 0) { if (err) err.textContent = t("no_role", { role: v.slice(1) }); return; }
          out[k] = who;
        } else out[k] = v;
      }
      cmds.push(out);
    }
    KV.lastSender = $("preset-error");
    cmds.forEach(send);
    const ack = $("ack");
    if (ack) ack.textContent = t("preset_sent", { label: preset.label });
  }

  // ---- fork (student) and open a room (instructor on a lesson page) ---------------------
  let forking = false, opening = false;
  const shareAck = KV.onAck.share, exportAck = KV.onAck.export;

  document.addEventListener("DOMContentLoaded", function () {
    const node = $("room-data");
    RD = node ? JSON.parse(node.textContent) : {};
    const share = KV.onAck.share, exp = KV.onAck.export;   // stepper.js's, loaded before this file
    KV.onAck.share = function (msg) {
      if (forking && msg.share_id) { forking = false; window.location.assign(RD.fork_url + encodeURIComponent(msg.share_id)); }
      else if (share || shareAck) (share || shareAck)(msg);
    };
    KV.onAck.export = function (msg) {
      if (opening) {
        opening = false;
        $("open-room-run").value = msg.file || "";
        $("open-room-form").submit();
      } else if (exp || exportAck) (exp || exportAck)(msg);
    };
    if (RD.name && $("room-you")) $("room-you").textContent = t("you_are", { name: RD.name });
    const fork = $("room-fork");
    if (fork) fork.addEventListener("click", function () {
      if (send({ cmd: "share" })) { forking = true; const a = $("ack"); if (a) a.textContent = t("forking"); }
    });
    const open = $("open-room-form");
    if (open) open.addEventListener("submit", function (e) {
      // Start the room from this sandbox's run; without a socket it starts at the lesson's beginning.
      if (opening || !send({ cmd: "export" })) return;
      e.preventDefault();
      opening = true;
      const a = $("ack"); if (a) a.textContent = t("opening_room");
      window.setTimeout(function () { if (opening) { opening = false; open.submit(); } }, 4000);
    });
    const presets = {};
    (RD.presets || []).forEach(function (p) { presets[p.id] = p; });
    document.querySelectorAll("button[data-preset]").forEach(function (btn) {
      btn.addEventListener("click", function () {
        const p = presets[btn.dataset.preset];
        if (p && btn.getAttribute("aria-disabled") !== "true") runPreset(p);
      });
    });
  });
})();
