"""A client connection as a node of the engine's network.

Each accepted socket gets its own node id (from :data:`FIRST_NODE_ID` up), registered with
``cluster.network``, so the engine's link faults (cut, delay, drop probability) apply per
client and broker: a request travels ``node -> broker`` with :meth:`Network.route`, the
handler runs at the broker on delivery, and its answer travels ``broker -> node``. Produce
answers come back as the engine's own ``ProduceResponse`` messages (``receive``).

Kafka answers a connection's requests in order, one at a time (the socket server mutes
a channel until its response is sent); so does :class:`Session`: the server awaits each
answer before reading the next request.
"""
from __future__ import annotations

from typing import Any, Callable

from engine.cluster.events import ClientConnected, ClientDisconnected, ClientRequest, ClientResponse
from engine.cluster.network import ProduceResponse

from .handlers import HANDLERS, Context
from .protocol import Request, error_name

__all__ = ["ClientNode", "Session", "FIRST_NODE_ID"]

FIRST_NODE_ID = 1000


class ClientNode:
    """The network's view of one connection: ``alive`` until the socket closes."""

    def __init__(self, node_id: int) -> None:
        self.id = node_id
        self.alive = True
        self.incarnation = 0
        self.pending: dict[int, Callable[[ProduceResponse], None]] = {}

    def receive(self, src: int, msg: Any) -> None:
        if isinstance(msg, ProduceResponse):
            handler = self.pending.pop(msg.request_id, None)
            if handler is not None:
                handler(msg)


class Session:
    """One connection to one broker: dispatches decoded requests through the network."""

    def __init__(self, server: Any, broker_id: int, node_id: int) -> None:
        self.server = server
        self.cluster = server.cluster
        self.broker_id = broker_id
        self.node = ClientNode(node_id)
        self.cluster.network.register(node_id, self.node)
        # With ``server.trace``, the connection and each request and answer are engine events
        # (a picture can draw them); the replay builds its server with the same setting.
        self.trace = bool(getattr(server, "trace", False))
        if self.trace:
            self.cluster.events.emit(ClientConnected(node_id, broker_id))

    def close(self) -> None:
        if self.trace and self.node.alive:
            self.cluster.events.emit(ClientDisconnected(self.node.id, self.broker_id))
        self.node.alive = False
        self.node.pending.clear()

    def dispatch(self, req: Request, reply: Callable[[dict | None], None]) -> None:
        """Send ``req`` to the broker; ``reply(body)`` runs when its answer is delivered
        back (``None`` for acks=0 produce, at once at the broker). A dropped message is
        never answered, as on a real network: the client's request timeout takes over."""
        net = self.cluster.network
        if self.trace:
            self.cluster.events.emit(ClientRequest(self.node.id, self.broker_id, req.api, req.api_version,
                                                   req.correlation_id))
        net.route(self.node.id, self.broker_id, req.api, self._at_broker, req, reply)

    def _at_broker(self, req: Request, reply: Callable) -> None:
        broker = self.cluster.brokers[self.broker_id]
        if not broker.alive:
            return      # a request read off the socket is handled even if the client has gone since
        ctx = Context(self.server, broker, self.node)

        def respond(body: dict | None) -> None:
            if body is None:
                reply(None)
                return
            if broker.alive:
                if self.trace:
                    self.cluster.events.emit(ClientResponse(self.node.id, self.broker_id, req.api, req.api_version,
                                                            req.correlation_id, first_error(body)))
                self.cluster.network.route(self.broker_id, self.node.id, req.api + "Response", self._deliver,
                                           reply, body)

        HANDLERS[req.api_key](ctx, req.api_version, req.body, respond)

    def _deliver(self, reply: Callable, body: dict) -> None:
        if self.node.alive:
            reply(body)


def first_error(body: Any, depth: int = 0) -> str:
    """The first non-zero ``error_code`` in an answer (top level first, then its lists, in
    order), by Kafka's name; "NONE" when there is none."""
    if isinstance(body, dict):
        code = body.get("error_code")
        if isinstance(code, int) and code:
            return error_name(code)
        if depth < 4:
            for value in body.values():
                if isinstance(value, (list, dict)):
                    found = first_error(value, depth + 1)
                    if found != "NONE":
                        return found
    elif isinstance(body, list) and depth < 4:
        for item in body:
            found = first_error(item, depth + 1)
            if found != "NONE":
                return found
    return "NONE"
