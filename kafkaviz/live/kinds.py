"""The sandbox-kind registry.

A *sandbox kind* owns the engine objects one lesson plays with (a single ``Log``, a
``Cluster``, ...), declares the commands it accepts, and describes its state as plain
JSON for the frames. The runtime (``runtime.py``) does everything common: ids, data
directories, locking, quotas on command rate, frames, reset, idle reclaim.

To add a kind: subclass :class:`SandboxKind`, set ``name`` and ``commands``, implement
``__init__`` (build the engine on ``data_dir`` with the given ``events`` log),
``state()`` and the handler methods named by the commands, and decorate the class
with :func:`register`. See docs/web.md.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar

from engine.clock import Scheduler, VirtualClock
from engine.events import Envelope, EventLog

from .validation import CommandSpec

__all__ = ["SandboxKind", "Limits", "SANDBOX_KINDS", "register", "get_kind"]


class Limits:
    """Quotas of one sandbox (from settings.KAFKAVIZ_RUNTIME)."""

    def __init__(self, max_messages: int, max_disk_bytes: int) -> None:
        self.max_messages = max_messages
        self.max_disk_bytes = max_disk_bytes


class SandboxKind:
    """Base of the engine holders. One instance per sandbox; recreated on reset.

    Handlers run in a worker thread under the sandbox's lock, one at a time, so they
    may call the engine freely. They return a short sentence for the person who sent
    the command, or raise ``CommandError`` / an engine ``KafkaError`` (both reach that
    person as a clear error message; the sandbox stays usable)."""

    name: ClassVar[str] = ""
    commands: ClassVar[dict[str, CommandSpec]] = {}
    events_kept: ClassVar[int] = 500

    def __init__(self, data_dir: Path, *, seed: int, limits: Limits,
                 listener: Callable[[Envelope], None] | None = None) -> None:
        self.data_dir = data_dir
        self.seed = seed
        self.limits = limits
        self.clock = VirtualClock()
        self.scheduler = Scheduler(self.clock)
        self.events = EventLog(self.clock, keep=self.events_kept)
        if listener is not None:
            self.events.subscribe(listener)

    def state(self) -> dict[str, Any]:
        raise NotImplementedError

    def on_event(self, env: Envelope) -> None:
        """Called for every engine event (e.g. to track try-it tasks)."""

    def close(self) -> None:
        """Release files; the runtime removes the data directory afterwards."""


SANDBOX_KINDS: dict[str, type[SandboxKind]] = {}


def register(cls: type[SandboxKind]) -> type[SandboxKind]:
    if not cls.name or cls.name in SANDBOX_KINDS:
        raise TypeError(f"sandbox kind needs a unique name, got {cls.name!r}")
    SANDBOX_KINDS[cls.name] = cls
    return cls


def get_kind(name: str) -> type[SandboxKind]:
    # Import the modules that register kinds; kept here so the registry is complete
    # wherever it is used.
    from . import segments  # noqa: F401
    from . import replication  # noqa: F401  (lesson 10)
    from . import topic  # noqa: F401  (lesson 1)
    from . import inside_segment  # noqa: F401  (lessons 3, 4)
    from . import retention  # noqa: F401  (lesson 5)
    from . import page_cache  # noqa: F401  (lesson 7)
    return SANDBOX_KINDS[name]
