"""Network: delivery after latency, per-link cuts (one or both directions), delay,
seeded random drops, and drops when an end is down or crashed in flight."""
from __future__ import annotations

import random

import pytest

from engine.clock import Scheduler, VirtualClock
from engine.cluster.network import BrokerHeartbeat, Network
from engine.errors import InvalidRequestError
from engine.events import EventLog


class Node:
    def __init__(self) -> None:
        self.alive = True
        self.incarnation = 1
        self.got: list = []

    def receive(self, src, msg) -> None:
        self.got.append((src, msg))


def make(seed: int = 1, latency: int = 5):
    clock = VirtualClock()
    sched = Scheduler(clock)
    events = EventLog(clock)
    net = Network(sched, random.Random(seed), events, latency)
    nodes = {i: Node() for i in (0, 1, 2)}
    for i, n in nodes.items():
        net.register(i, n)
    return net, sched, events, nodes


def hb(i: int = 0) -> BrokerHeartbeat:
    return BrokerHeartbeat(i, 1)


def test_delivery_happens_after_latency_not_before():
    net, sched, _, nodes = make(latency=5)
    net.send(0, 1, hb())
    sched.advance(4)
    assert nodes[1].got == []
    sched.advance(1)
    assert nodes[1].got == [(0, hb())]


def test_cut_one_direction_drops_only_that_direction():
    net, sched, events, nodes = make()
    net.cut(0, 1, both=False)
    net.send(0, 1, hb())
    net.send(1, 0, hb(1))
    sched.advance(10)
    assert nodes[1].got == []
    assert nodes[0].got == [(1, hb(1))]
    dropped = events.of_kind("message_dropped")
    assert [(e.src, e.dst, e.reason, e.api) for e in dropped] == [(0, 1, "link_cut", "BrokerHeartbeat")]


def test_cut_both_then_heal():
    net, sched, _, nodes = make()
    net.cut(0, 1)
    net.send(1, 0, hb(1))
    sched.advance(10)
    assert nodes[0].got == []
    net.heal(0, 1)
    net.send(1, 0, hb(1))
    sched.advance(10)
    assert nodes[0].got == [(1, hb(1))]


def test_cut_while_in_flight_drops():
    net, sched, events, nodes = make(latency=5)
    net.send(0, 1, hb())
    sched.advance(2)
    net.cut(0, 1)
    sched.advance(10)
    assert nodes[1].got == []
    assert events.of_kind("message_dropped")[0].reason == "link_cut"


def test_link_delay_adds_to_latency():
    net, sched, _, nodes = make(latency=5)
    net.set_delay(0, 1, 100)
    net.send(0, 1, hb())
    sched.advance(104)
    assert nodes[1].got == []
    sched.advance(1)
    assert len(nodes[1].got) == 1


def test_drop_probability_is_seeded_and_deterministic():
    def pattern(seed):
        net, sched, _, nodes = make(seed=seed)
        net.set_drop_probability(0, 1, 0.5)
        for _ in range(40):
            net.send(0, 1, hb())
        sched.advance(10)
        return len(nodes[1].got), net.dropped
    a, b = pattern(3), pattern(3)
    assert a == b
    assert 0 < a[0] < 40 and a[0] + a[1] == 40


def test_drop_probability_extremes():
    net, sched, _, nodes = make()
    net.set_drop_probability(0, 1, 1.0)
    net.set_drop_probability(0, 2, 0.0)
    for _ in range(5):
        net.send(0, 1, hb())
        net.send(0, 2, hb())
    sched.advance(10)
    assert nodes[1].got == [] and len(nodes[2].got) == 5


def test_destination_down_and_source_crashed_in_flight_are_dropped():
    net, sched, events, nodes = make(latency=5)
    net.send(0, 1, hb())
    net.send(2, 0, hb(2))
    nodes[1].alive = False            # destination goes down
    nodes[2].incarnation += 1         # source crashed and restarted meanwhile
    sched.advance(10)
    assert nodes[1].got == [] and nodes[0].got == []
    reasons = sorted(e.reason for e in events.of_kind("message_dropped"))
    assert reasons == ["destination_down", "source_crashed"]


def test_bad_link_arguments_raise_and_change_nothing():
    net, _, events, _ = make()
    before = net.faults()
    with pytest.raises(InvalidRequestError):
        net.cut(0, 9)
    with pytest.raises(InvalidRequestError):
        net.cut(1, 1)
    with pytest.raises(InvalidRequestError):
        net.set_delay(0, 1, -5)
    with pytest.raises(InvalidRequestError):
        net.set_drop_probability(0, 1, 1.5)
    assert net.faults() == before and events.seq == 0


def test_messages_due_at_one_instant_are_one_task_delivered_in_send_order():
    net, sched, _, nodes = make()
    net.send(0, 1, hb(0))
    net.send(2, 1, hb(2))
    assert len(sched.pending()) == 1
    assert [(m["src"], m["dst"], m["sent_ms"], m["deliver_ms"]) for m in net.in_flight()] == [(0, 1, 0, 5), (2, 1, 0, 5)]
    sched.advance(5)
    assert [src for src, _ in nodes[1].got] == [0, 2] and net.in_flight() == []


def test_a_task_scheduled_between_two_sends_keeps_them_apart_so_order_is_unchanged():
    net, sched, _, nodes = make()
    order = []
    nodes[1].receive = lambda src, msg: order.append(("msg", src))
    net.send(0, 1, hb(0))
    sched.schedule(5, order.append, ("task",))
    net.send(2, 1, hb(2))
    assert len(sched.pending()) == 3
    sched.advance(5)
    assert order == [("msg", 0), ("task",), ("msg", 2)]


def test_a_timeout_reserved_for_a_later_instant_between_two_sends_keeps_them_one_task():
    net, sched, _, nodes = make()
    order = []
    nodes[1].receive = lambda src, msg: order.append(("msg", src, sched.now_ms()))
    net.send(0, 1, hb(0))
    seq = sched.reserve(5 + 30_000)              # a request timeout, re-armed lazily later
    net.send(2, 1, hb(2))
    assert len(sched.pending()) == 1             # one delivery task for both
    assert [(m["src"], m["sent_ms"], m["deliver_ms"]) for m in net.in_flight()] == [(0, 0, 5), (2, 0, 5)]
    sched.schedule_reserved(5 + 30_000, seq, order.append, ("timeout",))
    sched.advance(30_010)
    assert order == [("msg", 0, 5), ("msg", 2, 5), ("timeout",)]


def test_a_timeout_reserved_for_the_same_instant_keeps_the_sends_apart_so_order_is_unchanged():
    net, sched, _, nodes = make()
    order = []
    nodes[1].receive = lambda src, msg: order.append(("msg", src))
    net.send(0, 1, hb(0))
    seq = sched.reserve(5)                       # due exactly when the first message arrives
    net.send(2, 1, hb(2))
    sched.schedule_reserved(5, seq, order.append, ("timer",))
    assert len(sched.pending()) == 3
    sched.advance(5)
    assert order == [("msg", 0), ("timer",), ("msg", 2)]


def test_a_reservation_without_a_due_time_keeps_the_sends_apart():
    net, sched, _, nodes = make()
    net.send(0, 1, hb(0))
    sched.reserve()
    net.send(2, 1, hb(2))
    assert len(sched.pending()) == 2
