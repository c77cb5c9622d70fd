"""The ``quorum-state`` file: a voter's election state, kept across crashes.

Kafka (FileQuorumStateStore) keeps it in the metadata log's directory,
``__cluster_metadata-0/quorum-state``, as JSON, and rewrites it on every state transition
through a temporary file, fsync and rename. With a static voter set
(``controller.quorum.voters``, kraft.version 0) it writes data version 0::

    {"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,
     "currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}

Without it a restarted voter could vote twice in one epoch, or go back to an older epoch.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["QuorumStateFile", "ElectionState", "QUORUM_STATE_FILE"]

QUORUM_STATE_FILE = "quorum-state"


@dataclass(frozen=True)
class ElectionState:
    leader_epoch: int
    leader_id: int
    voted_id: int

    def to_dict(self) -> dict:
        return {"leader_id": self.leader_id, "leader_epoch": self.leader_epoch, "voted_id": self.voted_id}


class QuorumStateFile:
    """Read and write one node's ``quorum-state`` on the shared :class:`engine.disk.Disk`."""

    def __init__(self, disk, log_dir: str, voters: tuple) -> None:
        self.disk = disk
        self.rel = f"{log_dir}/{QUORUM_STATE_FILE}"
        self.voters = tuple(sorted(voters))

    def encode(self, state: ElectionState) -> bytes:
        body = {"clusterId": "", "leaderId": state.leader_id, "leaderEpoch": state.leader_epoch,
                "votedId": state.voted_id, "appliedOffset": 0,
                "currentVoters": [{"voterId": v} for v in self.voters], "data_version": 0}
        return json.dumps(body, separators=(",", ":")).encode()

    def write(self, state: ElectionState, durable: bool = True) -> None:
        data = self.encode(state)
        if durable:
            self.disk.write_atomic(self.rel, data)
        else:
            # Unsafe mode: a fresh file never fsync'd, so a power loss leaves it empty.
            self.disk.delete(self.rel)
            self.disk.append(self.rel, data)

    def read(self) -> ElectionState | None:
        """The stored state, or None when the file is missing, empty or not JSON."""
        if not self.disk.exists(self.rel):
            return None
        raw = self.disk.read_all(self.rel)
        try:
            body = json.loads(raw.decode())
            return ElectionState(int(body["leaderEpoch"]), int(body["leaderId"]), int(body["votedId"]))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None
