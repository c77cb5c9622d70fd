"""KRaft: the Raft quorum that keeps Kafka 4's ``__cluster_metadata`` log (KIP-595, KIP-996).

A package of its own; :mod:`engine.cluster.kraft_controller` runs it as a cluster's controller
(settings ``kraft`` / ``controllers``):

- ``config``       :class:`QuorumConfig`, the ``controller.quorum.*`` settings with Kafka's defaults
- ``messages``     Vote, BeginQuorumEpoch, EndQuorumEpoch and Fetch requests and responses (frozen data)
- ``events``       what every step emits (state changes, messages, appends, truncations, HW moves)
- ``metadata``     Kafka's metadata records (generated from its JSON), framed as ApiMessageAndVersion
- ``records``      the metadata log's batches: metadata (or opaque) data records and control records
                   (LeaderChangeMessage, SnapshotHeader/Footer, ...) generated from Kafka's JSON
- ``quorum_state`` the ``quorum-state`` file that keeps a voter's epoch and vote across crashes
- ``node``         :class:`RaftNode`, one voter's or observer's state machine (KafkaRaftClient + QuorumState)
- ``quorum``       :class:`Quorum`, N voters and some observers on the engine's Network and Scheduler
- ``checker``      :class:`RaftChecker`, Raft's safety rules checked while a run goes
- ``schedules``    seeded random fault schedules over a :class:`Quorum`
- ``failover``     virtual time from a leader's crash to a new leader, at Kafka's default timeouts

See ``docs/kraft.md`` for the rules followed and the choices still to check against Kafka.
"""
