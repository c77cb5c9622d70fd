"""Fault presets of the presenter view: the one home of what each button sends.

A preset is data: a key (its keyboard shortcut), words, and the commands it sends, as
engine commands (``{"cmd": ...}``: ``engine/cluster/commands.py`` for a cluster,
``engine/storage_commands.py`` for one broker's storage; docs/commands.md), or a page
control of the kind (``load`` a scenario).
A few fields name a role instead of a broker, because who leads changes during a
class: ``$leader`` (the leader of the partition the diagrams show), ``$controller``
(the active controller) and ``$follower`` (a live replica of that partition that is not
its leader). The presenter page fills them from the frame it last drew
(``static/js/room.js``) and sends the commands over the room's socket, where they are
authorised and validated like any other command.

A preset is offered where the room's lesson accepts every command it sends (checked
against the kind's command specs, the same ones the server validates with); elsewhere
it is shown disabled with the reason. A role may fill only a field the engine marks as
naming a node (``engine.cluster.commands.node_fields``: a fault kind's target), so a preset
cannot aim ``$leader`` at, say, a delay.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext, gettext_lazy as _

from engine.cluster.commands import COMMANDS, node_fields
from engine.storage_commands import STORAGE_COMMANDS

from kafkaviz.live.validation import CommandError, validate_command

__all__ = ["Preset", "PRESETS", "presets_for", "ROLES"]

ROLES = ("$leader", "$controller", "$follower")


@dataclass(frozen=True)
class Preset:
    id: str
    key: str        # presenter shortcut (aria-keyshortcuts): Shift+letter, so a stray key breaks nothing
    label: Any                     # lazy translation
    explain: Any
    do: tuple[dict[str, Any], ...]
    world: str = "cluster"          # whose engine commands it sends: "cluster" or "storage" (one broker)


# A world's command vocabulary: "advance" or "produce" is a command of both, meaning different things.
VOCABULARIES = {"cluster": COMMANDS, "storage": STORAGE_COMMANDS}


PRESETS: tuple[Preset, ...] = (
    Preset("kill-leader", "Shift+K", _("Kill the leader"),
           _("Hard-crash the broker that leads the partition: unflushed data is lost and it stays down."),
           ({"cmd": "crash", "broker": "$leader"},)),
    Preset("cut-leader-controller", "Shift+X", _("Cut the leader from the controller"),
           _("Drop every message between the partition's leader and the active controller."),
           ({"cmd": "cut_link", "a": "$leader", "b": "$controller", "both": True},)),
    Preset("slow-follower", "Shift+W", _("Slow a follower"),
           _("Delay each fetch of a follower by 2 s, past replica.lag.time.max.ms, so it drops out of the ISR."),
           ({"cmd": "slow_follower", "broker": "$follower", "delay_ms": 2000},)),
    Preset("unclean-election", "Shift+E", _("Unclean election"),
           _("Start the engine's unclean-election scenario: an out-of-sync replica becomes leader."),
           ({"cmd": "load", "scenario": "unclean-election-loss", "truncation": "epoch"},)),
    Preset("kip101-loss", "Shift+L", _("KIP-101: data loss"),
           _("Start KIP-101 scenario 1 under high-watermark truncation: an acknowledged record is lost."),
           ({"cmd": "load", "scenario": "kip101-data-loss", "truncation": "hw"},)),
    Preset("kip101-divergence", "Shift+D", _("KIP-101: divergence"),
           _("Start KIP-101 scenario 2 under high-watermark truncation: replicas end with different logs."),
           ({"cmd": "load", "scenario": "kip101-divergence", "truncation": "hw"},)),
    Preset("heal-all", "Shift+H", _("Heal every link"),
           _("Restore every cut, delayed or lossy link."),
           ({"cmd": "heal_all"},)),
    Preset("fill-disk", "Shift+F", _("Fill the disk to retention"),
           _("Send 50 messages, then advance the clock 10 s (10000 ms) so the retention check runs."),
           ({"cmd": "produce", "partition": 0, "count": 50, "value_size": 100}, {"cmd": "advance", "ms": 10000}),
           world="storage"),
)


def _placeholder_free(cmd: dict[str, Any], engine: Any) -> dict[str, Any]:
    """A command with its roles replaced by broker 0, to check it against the specs
    (which broker is the engine's question, asked when the command really runs). A role
    may stand only in a field that names a node (``node_fields``: a fault's target)."""
    nodes = node_fields(engine) if engine is not None else ()
    for k, v in cmd.items():
        if v in ROLES and k not in nodes:
            raise CommandError("invalid", f"{cmd['cmd']}: {v} may only name a broker ({', '.join(nodes) or 'none'}), "
                                          f"not {k}", k, cmd["cmd"])
    return {k: (0 if v in ROLES else v) for k, v in cmd.items()}


def presets_for(specs: dict[str, Any]) -> list[dict[str, Any]]:
    """Every preset as the presenter page gets it: id, key, words, commands, and
    ``enabled`` / ``reason`` for the room's lesson (``specs``: its kind's command specs)."""
    out = []
    for preset in PRESETS:
        reason = ""
        for cmd in preset.do:
            try:
                spec = specs.get(cmd["cmd"])
                engine = spec.extra.get("engine") if spec is not None else None
                validate_command(specs, _placeholder_free(cmd, engine))
                if engine is not None and engine.vocabulary is not VOCABULARIES[preset.world]:
                    raise CommandError("unknown_type", f"{cmd['cmd']} is another world's command")
            except CommandError as exc:
                reason = (gettext("This lesson's sandbox has no “%(type)s” command.") % {"type": cmd["cmd"]}
                          if exc.code == "unknown_type" else
                          gettext("Not in this lesson: %(why)s") % {"why": exc})
                break
        out.append({"id": preset.id, "key": preset.key, "label": str(preset.label), "explain": str(preset.explain),
                    "do": [dict(c) for c in preset.do], "enabled": not reason, "reason": reason})
    return out
