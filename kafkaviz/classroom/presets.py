"""Fault presets of the presenter view: one key press, one fault for the whole class.

A preset is data: an id, a key, a label, and a function from the room's current state
(the kind's ``state()``) to the commands it sends — in the engine's own vocabulary, the
same commands the lesson's forms send, checked by the same specs and refused by the same
engine checks. Nothing is resolved in the page: "kill the leader" asks the server which
broker leads *now*. A preset the room's lesson cannot run (its kind lacks the command, or
the state does not allow it: no leader to kill) says why instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from django.utils.translation import gettext_lazy as _

__all__ = ["Preset", "PRESETS", "Unavailable", "resolve", "describe"]


class Unavailable(Exception):
    """This preset cannot run on this room now; the message says why."""


Commands = list[dict[str, Any]]


@dataclass(frozen=True)
class Preset:
    id: str
    key: str                                    # the presenter view's shortcut (Shift+letter: plain
                                                # letters are the lesson's own broker keys)
    label: Any                                  # lazy translation
    needs: tuple[str, ...]                      # command types the room's kind must accept
    build: Callable[[dict[str, Any], dict[str, Any]], Commands]


def _partition(state: dict[str, Any]) -> dict[str, Any]:
    part = state.get("partition")
    if not isinstance(part, dict):
        raise Unavailable(_("This lesson has no replicated partition."))
    return part


def _leader(state: dict[str, Any]) -> int:
    leader = _partition(state).get("leader")
    if leader is None or leader < 0:
        raise Unavailable(_("The partition has no leader right now."))
    return int(leader)


def _alive(state: dict[str, Any]) -> list[int]:
    return [b["id"] for b in state.get("brokers", ()) if b.get("alive")]


def _kill_leader(state: dict[str, Any], specs: dict[str, Any]) -> Commands:
    return [{"type": "crash", "broker": _leader(state)}]


def _cut_leader_from_controller(state: dict[str, Any], specs: dict[str, Any]) -> Commands:
    leader = _leader(state)
    controller = (state.get("controller") or {}).get("active")
    if controller is None or controller < 0:
        raise Unavailable(_("There is no active controller right now."))
    if controller == leader:
        raise Unavailable(_("The leader is the controller's own broker; there is no link to cut."))
    return [{"type": "cut_link", "a": leader, "b": int(controller), "both": True}]


def _a_follower(state: dict[str, Any]) -> int:
    part = _partition(state)
    leader = part.get("leader")
    alive = set(_alive(state))
    followers = [b for b in part.get("isr") or part.get("replicas") or () if b != leader and b in alive]
    if not followers:
        raise Unavailable(_("No live follower to slow down."))
    return int(followers[0])


def _slow_follower(state: dict[str, Any], specs: dict[str, Any]) -> Commands:
    field = {f.name: f for f in specs["slow_follower"].fields}.get("delay_ms")
    delay = 20_000 if field is None or field.max is None else min(20_000, field.max)
    return [{"type": "slow_follower", "broker": _a_follower(state), "delay_ms": delay}]


def _unclean_election(state: dict[str, Any], specs: dict[str, Any]) -> Commands:
    names = {f.name: f for f in specs["set_config"].fields}.get("name")
    if names is None or "unclean.leader.election.enable" not in (names.choices or ()):
        raise Unavailable(_("This lesson does not let unclean.leader.election.enable change."))
    return [{"type": "set_config", "name": "unclean.leader.election.enable", "value": 1}]


def _restart_all(state: dict[str, Any], specs: dict[str, Any]) -> Commands:
    dead = [b["id"] for b in state.get("brokers", ()) if not b.get("alive")]
    if not dead:
        raise Unavailable(_("Every broker is running."))
    return [{"type": "restart", "broker": b} for b in dead]


def _heal_all(state: dict[str, Any], specs: dict[str, Any]) -> Commands:
    return [{"type": "heal_all"}]


def _scenario(name: str) -> Callable[[dict[str, Any], dict[str, Any]], Commands]:
    def build(state: dict[str, Any], specs: dict[str, Any]) -> Commands:
        fields = {f.name: f for f in specs["load"].fields}
        if name not in (fields["scenario"].choices or ()):
            raise Unavailable(_("This lesson does not have that scenario."))
        truncation = "hw" if "hw" in (fields["truncation"].choices or ()) else fields["truncation"].default
        return [{"type": "load", "scenario": name, "truncation": truncation}]
    return build


def _produce(state: dict[str, Any], specs: dict[str, Any]) -> Commands:
    return [{"type": "produce", "count": 3}]


def _fill_to_retention(state: dict[str, Any], specs: dict[str, Any]) -> Commands:
    count = {f.name: f for f in specs["produce"].fields}["count"]
    return [{"type": "produce", "count": count.max or 10}]


PRESETS: tuple[Preset, ...] = (
    Preset("kill-leader", "Shift+K", _("Kill the leader"), ("crash",), _kill_leader),
    Preset("cut-leader-controller", "Shift+C", _("Cut the leader from the controller"), ("cut_link",),
           _cut_leader_from_controller),
    Preset("slow-follower", "Shift+F", _("Slow a follower"), ("slow_follower",), _slow_follower),
    Preset("unclean-election", "Shift+U", _("Allow unclean election"), ("set_config",), _unclean_election),
    Preset("restart-all", "Shift+B", _("Restart dead brokers"), ("restart",), _restart_all),
    Preset("heal-all", "Shift+H", _("Heal every link"), ("heal_all",), _heal_all),
    Preset("kip101-1", "Shift+L", _("KIP-101 case 1: HW truncation loses a write"), ("load",),
           _scenario("kip101-data-loss")),
    Preset("kip101-2", "Shift+V", _("KIP-101 case 2: replicas diverge"), ("load",), _scenario("kip101-divergence")),
    Preset("produce", "Shift+P", _("Produce 3 records"), ("produce",), _produce),
    Preset("fill-disk", "Shift+G", _("Fill the disk to retention"), ("produce", "advance"), _fill_to_retention),
)
_BY_ID = {p.id: p for p in PRESETS}


def resolve(preset_id: Any, state: dict[str, Any], specs: dict[str, Any]) -> Commands:
    """The commands preset ``preset_id`` sends to a room in ``state``; raises
    :class:`Unavailable` (with the reason) when it cannot run there now, KeyError when
    there is no such preset."""
    preset = _BY_ID[preset_id] if isinstance(preset_id, str) else None
    if preset is None:
        raise KeyError(preset_id)
    missing = [n for n in preset.needs if n not in specs]
    if missing:
        raise Unavailable(_("This lesson's sandbox has no such control."))
    return preset.build(state, specs)


def describe(specs: dict[str, Any]) -> list[dict[str, Any]]:
    """The presets as page data: id, key, label, and whether the room's kind has the
    commands at all (whether the state allows one is the server's answer at the press)."""
    return [{"id": p.id, "key": p.key, "label": str(p.label),
             "available": all(n in specs for n in p.needs)} for p in PRESETS]
