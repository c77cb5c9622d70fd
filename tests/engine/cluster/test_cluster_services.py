"""The coordinators are given to the cluster when it is built and made on first use."""
from __future__ import annotations

import pytest

from engine.cluster.cluster import Cluster, ClusterServices
from engine.cluster.config import ClusterConfig
from engine.cluster.transactions import TransactionService
from engine.disk import Disk
from engine.errors import InvalidRequestError


class RecordingTransactions(TransactionService):
    made: list = []

    def __init__(self, cluster, **settings) -> None:
        RecordingTransactions.made.append(settings)
        super().__init__(cluster, **settings)


def test_a_cluster_has_no_coordinator_until_one_is_needed(tmp_path):
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig(brokers=1))
    assert (c.transactions, c.groups, c.txn_offsets) == (None, None, None)
    assert c.group_service() is c.group_service() is c.groups
    assert c.txn_offset_service() is c.txn_offsets
    assert c.transactions is None


def test_the_transaction_coordinator_comes_from_the_factory_given_at_build_time(tmp_path):
    RecordingTransactions.made = []
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig(brokers=1),
                services=ClusterServices(transactions=RecordingTransactions))
    c.create_producer("p", transactional_id="tx-1")
    c.init_transactions("p")
    assert isinstance(c.transactions, RecordingTransactions)
    assert RecordingTransactions.made == [{}]


def test_transaction_settings_after_first_use_are_refused(tmp_path):
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig(brokers=1))
    assert c.transaction_service(num_partitions=3).num_partitions == 3
    with pytest.raises(InvalidRequestError, match="already in use"):
        c.transaction_service(num_partitions=4)
