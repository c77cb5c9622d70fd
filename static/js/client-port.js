/* "Connect your own client": the sandbox's listener (kafkaviz/live/client_listener.py) as
 * the frame's state says -- off on this server, not started, or listening with its
 * bootstrap address, the connections attached now, and a snippet per client with the
 * address filled in. The requests themselves are engine events: flow.js draws them on
 * the cluster picture and the timeline lists them. */
(function () {
  "use strict";
  function fillSnippets(bootstrap) {
    const box = document.getElementById("client-port-snippets");
    if (!box) return;
    box.hidden = !bootstrap;
    box.querySelectorAll("code[data-snippet]").forEach(function (code) {
      code.textContent = bootstrap ? code.dataset.snippet.split("{bootstrap}").join(bootstrap) : "";
    });
  }

  KV.register("client-port", {
    update: function (container, frame) {
      const cp = (frame.state || {}).client_port;
      const form = document.getElementById("client-port-form");
      const button = document.getElementById("client-port-button");
      container.replaceChildren();
      fillSnippets(cp && cp.open ? cp.bootstrap : "");
      if (!cp) return;
      if (!cp.available) {
        if (form) form.style.display = "none";
        container.append(KV.html("p", { class: "note" }, KV.t("cp_off")));
        return;
      }
      if (form) form.style.display = cp.open ? "none" : "";
      if (button) KV.setDisabled(button, false);
      if (!cp.open) {
        container.append(KV.html("p", { class: "note" }, KV.t("cp_closed")));
        return;
      }
      const head = KV.html("p", { class: "ycl-bootstrap" }, KV.t("cp_bootstrap") + " ");
      head.append(KV.html("code", { id: "client-port-bootstrap" }, cp.bootstrap));
      container.append(head);
      const ports = KV.html("ul", { class: "ycl-endpoints" });
      (cp.endpoints || []).forEach(function (e) {
        ports.append(KV.html("li", {}, KV.brokerName(e[0]) + " → " + e[1] + ":" + e[2]));
      });
      container.append(ports);
      const conns = cp.connections || [];
      container.append(KV.html("p", { class: "ycl-connections", id: "client-port-connections" },
        conns.length ? KV.t("cp_connections", { n: conns.length }) + " " +
          conns.map(function (c) { return c.node + " → " + KV.brokerName(c.broker); }).join(", ")
          : KV.t("cp_no_connections")));
    },
  });
})();
