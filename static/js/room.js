// A room page (student or presenter): what this browser may do, who is here, presets.
// The server decides everything (kafkaviz/classroom/consumers.py); this module only shows
// it: {"type": "room", role, can_control, roster?, closed} arrives on connect and after
// every change, and the page follows.
(function () {
  "use strict";
  const $ = function (id) { return document.getElementById(id); };
  let canControl = false;

  function send(msg) { if (KV.socket) KV.socket.send(JSON.stringify(msg)); }

  function setControls(on) {
    canControl = on;
    document.querySelectorAll("#live form[ws-send] button, #play-button").forEach(function (b) {
      KV.setDisabled(b, !on, on ? null : KV.t("room_not_yours"));
    });
    document.documentElement.classList.toggle("room-watching", !on);
  }

  function roster(list) {
    const ul = $("roster");
    if (!ul) return;
    ul.textContent = "";
    const count = $("roster-count");
    if (count) count.textContent = "(" + list.filter(function (m) { return m.connected; }).length + "/" + list.length + ")";
    if (!list.length) { ul.appendChild(KV.html("li", { class: "note" }, KV.t("room_nobody"))); return; }
    list.forEach(function (m) {
      const li = KV.html("li", { class: "roster-member" + (m.connected ? "" : " away"), "data-member": m.id });
      li.appendChild(KV.html("span", { class: "roster-name" }, m.name));
      // Words beside the dot, so presence and control never rest on colour alone.
      li.appendChild(KV.html("span", { class: "roster-state" },
        (m.connected ? "● " + KV.t("room_online") : "○ " + KV.t("room_away")) +
        (m.can_control ? " · " + KV.t("room_has_control") : "")));
      const b = KV.html("button", { type: "button", class: "secondary roster-grant", "aria-pressed": m.can_control ? "true" : "false" },
        m.can_control ? KV.t("room_take") : KV.t("room_give"));
      b.addEventListener("click", function () { send({ type: "room.grant", member: m.id, control: !m.can_control }); });
      li.appendChild(b);
      ul.appendChild(li);
    });
  }

  KV.onMessage = KV.onMessage || {};
  KV.onMessage.room = function (msg) {
    const role = $("room-role");
    if (msg.closed) {
      if (role) role.textContent = KV.t("room_closed");
      setControls(false);
      return;
    }
    setControls(!!msg.can_control);
    if (role) {
      role.textContent = msg.role === "instructor" ? KV.t("room_driving")
        : msg.can_control ? KV.t("room_control") : KV.t("room_watching");
    }
    if (msg.roster) roster(msg.roster);
  };

  KV.onAck = KV.onAck || {};
  KV.onAck["room.fork"] = function (msg) { if (msg.url) window.location.assign(msg.url); };

  // A watcher's forms stay visible (the class sees what the controls are) but do not send:
  // the server would refuse them anyway; here the reason shows at once.
  function refuse() {
    const err = $("general-error");
    if (err) err.textContent = KV.t("room_not_yours");
  }
  document.addEventListener("submit", function (e) {
    if (canControl || !e.target.closest || !e.target.closest("#live")) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    refuse();
  }, true);
  // The lesson's shortcut keys skip disabled controls silently; a watcher is told why.
  document.addEventListener("keydown", function (e) {
    if (canControl || e.altKey || e.ctrlKey || e.metaKey || KV.typing(e.target) || e.key === "?") return;
    const name = e.shiftKey && e.key.length === 1 ? "Shift+" + e.key.toUpperCase() : e.key === " " ? "Space" : e.key;
    const target = document.querySelector('#live [aria-keyshortcuts~="' + CSS.escape(name) + '"]');
    if (target && target.tagName === "BUTTON") refuse();
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("button[data-preset]").forEach(function (b) {
      b.addEventListener("click", function () {
        if (b.getAttribute("aria-disabled") === "true") return;
        send({ type: "room.preset", preset: b.getAttribute("data-preset") });
      });
    });
    const fork = $("room-fork");
    if (fork) fork.addEventListener("click", function () { send({ type: "room.fork" }); });
    setControls((KV.data.room || {}).role === "instructor");
  });
})();
