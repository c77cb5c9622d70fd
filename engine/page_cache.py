"""One broker holding one partition, for lesson 7: where appended bytes are (page cache or
disk), what a crash loses, and how recovery finds the last whole batch.

* Appends go through :class:`~engine.disk.Disk`, whose page-cache model remembers each
  file's durable size; ``fsync`` (the log's flush: ``flush.messages``, ``flush.ms``, a roll,
  a clean shutdown) makes a file durable.
* :meth:`StandaloneBroker.writeback` is the kernel's flusher: whole dirty pages reach the
  disk with no fsync asked, the partial last page does not.
* :meth:`StandaloneBroker.crash` with ``power_loss`` drops every byte not durable (the OS
  went down with the process); without it only the process dies and the page cache
  survives. :meth:`StandaloneBroker.restart` reopens the log from the
  ``recovery-point-offset-checkpoint`` (written every
  ``log.flush.offset.checkpoint.interval.ms`` and at clean shutdown): every segment at or
  after that point is re-read batch by batch and cut at the last whole, valid batch.
"""
from __future__ import annotations

from typing import Any

from .clock import Scheduler
from .cluster.events import BrokerCrashed, BrokerStarted
from .config import LogConfig
from .disk import Disk
from .errors import InvalidRequestError
from .events import Event, EventLog, event
from .log.checkpoint import CheckpointFile
from .log.log import Log

__all__ = ["StandaloneBroker", "PagesWrittenBack", "RecoveryCheckpointWritten", "PAGE_SIZE",
           "RECOVERY_CHECKPOINT", "CHECKPOINT_INTERVAL_MS"]

PAGE_SIZE = 4096
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
CHECKPOINT_INTERVAL_MS = 60000     # log.flush.offset.checkpoint.interval.ms


@event("pages_written_back")
class PagesWrittenBack(Event):
    """The kernel wrote whole dirty pages back. ``files`` = [{file, from, to}] (durable bytes)."""
    broker: int
    page_size: int
    files: list


@event("recovery_checkpoint_written")
class RecoveryCheckpointWritten(Event):
    broker: int
    topic: str
    partition: int
    recovery_point: int


class StandaloneBroker:
    """Broker ``broker_id`` with one log ``<topic>-<partition>`` under ``broker-<id>/``."""

    def __init__(self, disk: Disk, topic: str, config: LogConfig, scheduler: Scheduler, events: EventLog, *,
                 broker_id: int = 0, partition: int = 0, page_size: int = PAGE_SIZE) -> None:
        self.disk = disk
        self.id = broker_id
        self.dir = f"broker-{broker_id}"
        self.topic = topic
        self.partition = partition
        self.config = config
        self.scheduler = scheduler
        self.events = events
        self.page_size = page_size
        self.incarnation = 0
        self.alive = False
        self.log: Log | None = None
        self._task = None
        disk.mkdir(self.dir)
        self.checkpoint_file = CheckpointFile(disk, f"{self.dir}/{RECOVERY_CHECKPOINT}", (str, int, int))
        self.restart()

    # ---- lifecycle ---------------------------------------------------------
    def restart(self) -> Log:
        """Start the broker: read the recovery-point checkpoint and open (recover) the log."""
        if self.alive:
            raise InvalidRequestError(f"broker {self.id} is already running")
        self.incarnation += 1
        entries = {(t, p): o for t, p, o in self.checkpoint_file.read()}
        recovery_point = entries.get((self.topic, self.partition), 0)
        self.events.emit(BrokerStarted(self.id, self.incarnation, self.incarnation > 1, False))
        self.log = Log(self.disk, f"{self.dir}/{self.topic}-{self.partition}", self.topic, self.partition,
                       self.config, self.scheduler, self.events, broker=self.id, recovery_point=recovery_point,
                       hw_follows_leo=True)
        self.alive = True
        self._task = self.scheduler.schedule_periodic(CHECKPOINT_INTERVAL_MS, self.checkpoint_recovery_point,
                                                      name=f"recovery-checkpoint-{self.id}")
        return self.log

    def crash(self, power_loss: bool = True) -> list[dict[str, Any]]:
        """Kill the process; with ``power_loss`` the page cache goes too."""
        if not self.alive:
            raise InvalidRequestError(f"broker {self.id} is not running")
        assert self.log is not None
        self.log.cancel_tasks()
        if self._task is not None:
            self.scheduler.cancel(self._task)
            self._task = None
        self.alive = False
        self.log = None
        lost = []
        if power_loss:
            lost = [{"file": f.rsplit("/", 1)[-1], "size_before": a, "size_after": b}
                    for f, a, b in self.disk.crash(self.dir)]
        else:
            self.disk.close_all()
        self.events.emit(BrokerCrashed(self.id, power_loss, lost))
        return lost

    def checkpoint_recovery_point(self) -> None:
        if not self.alive or self.log is None:
            return
        rp = self.log.recovery_point
        self.checkpoint_file.write([(self.topic, self.partition, rp)])
        self.events.emit(RecoveryCheckpointWritten(self.id, self.topic, self.partition, rp))

    def flush(self) -> None:
        """An explicit fsync of everything below the log end offset, then the checkpoint."""
        log = self._running()
        log.flush()
        self.checkpoint_recovery_point()

    def writeback(self) -> list[dict[str, int]]:
        """The kernel's flusher: whole dirty pages of the broker's files become durable."""
        self._running()
        moved = [{"file": rel.rsplit("/", 1)[-1], "from": a, "to": b}
                 for rel, a, b in self.disk.writeback(self.dir, self.page_size)]
        self.events.emit(PagesWrittenBack(self.id, self.page_size, moved))
        return moved

    def _running(self) -> Log:
        if not self.alive or self.log is None:
            raise InvalidRequestError(f"broker {self.id} is down; restart it first")
        return self.log

    # ---- what is where -----------------------------------------------------
    def page_cache(self) -> list[dict[str, Any]]:
        """Every file of the partition directory with its size and how much of it is durable."""
        if self.log is None:
            d = f"{self.dir}/{self.topic}-{self.partition}"
            names = [(n, self.disk.size(f"{d}/{n}")) for n in self.disk.listdir(d)] if self.disk.exists(d) else []
        else:
            d = self.log.dir
            names = [(f.name, f.size) for f in self.log.files()]
        dirty = self.disk.dirty_files(d) if self.disk.exists(d) else {}
        out = []
        for name, size in sorted(names):
            durable = dirty.get(f"{d}/{name}", (size, size))[0]
            out.append({"name": name, "size": size, "durable": min(durable, size)})
        return out

    def close(self) -> None:
        if self.alive and self.log is not None:
            self.log.close()
            self.checkpoint_recovery_point()
            if self._task is not None:
                self.scheduler.cancel(self._task)
            self.alive = False
