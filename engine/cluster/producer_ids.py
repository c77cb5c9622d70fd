"""Producer ids under KRaft (KIP-730): each broker hands ids out of a block of 1,000 that the
active controller allocated it, and the controller records every block it hands out as a
ProducerIdsRecord in ``__cluster_metadata``.

- **The broker** (Kafka's ``RPCProducerIdManager``) asks the controller for a block with
  AllocateProducerIds (its id and broker epoch) at its first InitProducerId, which it answers
  COORDINATOR_LOAD_IN_PROGRESS (clients retry after ``retry.backoff.ms``). Later InitProducerIds
  take the next id of the block; when the id handed out reaches 90 % of the block it asks for
  the next one (``PidPrefetchThreshold``), and a block used up before the next arrives is again
  COORDINATOR_LOAD_IN_PROGRESS. A request unanswered after the request timeout is sent again;
  a restarted broker starts with no block.
- **The controller** (``ProducerIdControlManager.generateNextProducerId``) checks the broker
  epoch (STALE_BROKER_EPOCH otherwise), appends ``ProducerIdsRecord(BrokerId, BrokerEpoch,
  NextProducerId = first id of the block + 1000)`` and answers once the record is committed,
  so a block is never handed out twice: a new controller replays the record and starts the
  next block after it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.errors import CoordinatorLoadInProgressError

from .events import ProducerIdBlockReceived

__all__ = ["PRODUCER_ID_BLOCK_SIZE", "PREFETCH_THRESHOLD", "AllocateProducerIdsRequest",
           "AllocateProducerIdsResponse", "BrokerProducerIds"]

PRODUCER_ID_BLOCK_SIZE = 1000      # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
PREFETCH_THRESHOLD = 0.90          # ProducerIdManager.PidPrefetchThreshold


@dataclass(frozen=True)
class AllocateProducerIdsRequest:
    """Broker -> active controller (AllocateProducerIds, apiKey 67)."""
    api = "AllocateProducerIds"
    broker: int
    broker_epoch: int
    session: int


@dataclass(frozen=True)
class AllocateProducerIdsResponse:
    """Active controller -> broker: the block ``[first, first + size)``, or ``error``."""
    api = "AllocateProducerIdsResponse"
    controller: int
    error: str | None
    first: int
    size: int
    session: int


class BrokerProducerIds:
    """One broker process's producer-id blocks (made afresh at each start)."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.block: tuple[int, int] | None = None      # (first id, size) of the current block
        self.next_id = -1                               # the next id to hand out from it
        self.prefetched: tuple[int, int] | None = None
        self.session = 0
        self.inflight = False

    @property
    def cluster(self) -> Any:
        return self.broker.cluster

    def has_id(self) -> bool:
        return (self.block is not None and self.next_id < sum(self.block)) or self.prefetched is not None

    def generate(self) -> int:
        """The next producer id (RPCProducerIdManager.generateProducerId)."""
        if self.block is None or self.next_id >= sum(self.block):
            if self.prefetched is None:
                self.maybe_request()
                raise CoordinatorLoadInProgressError(
                    f"broker {self.broker.id}: producer ID block is full, waiting for the next block")
            self.block, self.prefetched = self.prefetched, None
            self.next_id = self.block[0]
        pid = self.next_id
        self.next_id += 1
        first, size = self.block
        if pid == first + int(size * PREFETCH_THRESHOLD):
            self.maybe_request()
        return pid

    def maybe_request(self) -> None:
        """Ask the controller for a block unless one is on its way or already prefetched."""
        b = self.broker
        if self.inflight or self.prefetched is not None or not b.alive or b.broker_epoch < 0:
            return
        self.session += 1
        self.inflight = True
        b.send_to_controller(AllocateProducerIdsRequest(b.id, b.broker_epoch, self.session))
        self.cluster.scheduler.schedule(self.cluster.config.controller_quorum_request_timeout_ms, self._timeout,
                                        b.incarnation, self.session, name=f"broker-{b.id} AllocateProducerIds timeout")

    def _timeout(self, incarnation: int, session: int) -> None:
        if self.broker.alive and self.broker.incarnation == incarnation and self.inflight and session == self.session:
            self.inflight = False
            self.maybe_request()

    def on_response(self, src: int, resp: AllocateProducerIdsResponse) -> None:
        if not self.inflight or resp.session != self.session:
            return
        self.inflight = False
        if resp.error is not None:
            return                   # asked again at the next InitProducerId
        block = (resp.first, resp.size)
        if self.block is None or self.next_id >= sum(self.block):
            self.block, self.next_id = block, resp.first
        else:
            self.prefetched = block
        self.cluster.events.emit(ProducerIdBlockReceived(self.broker.id, resp.first, resp.size, src))
