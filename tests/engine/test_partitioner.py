"""Kafka's default partitioner (lesson 1; seed 001 "ordering": keyless records spread over
partitions — today by sticky batches, KIP-480/KIP-794, not one by one)."""
import random

import pytest
from hypothesis import given, settings, strategies as st
from kafka.partitioner.default import murmur2 as kp_murmur2

from engine.errors import InvalidRequestError
from engine.partitioner import DefaultPartitioner, murmur2, partition_for_key


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_murmur2_equals_kafka_python(key):
    # kafka-python's murmur2 returns the unsigned-masked value Kafka's toPositive would not; compare bits
    assert murmur2(key) & 0xFFFFFFFF == kp_murmur2(bytearray(key)) & 0xFFFFFFFF


@pytest.mark.parametrize("partitions", [1, 2, 3, 6, 7, 50])
def test_keyed_placement_equals_kafka_python_default_partitioner(partitions):
    for i in range(2000):
        key = f"user-{i}".encode()
        expected = (kp_murmur2(bytearray(key)) & 0x7FFFFFFF) % partitions
        assert partition_for_key(key, partitions) == expected
        p = DefaultPartitioner(partitions, random.Random(1)).partition(key, 10)
        assert (p.partition, p.rule) == (expected, "key")


def test_same_key_same_partition_whatever_else_is_sent():
    part = DefaultPartitioner(3, random.Random(7), batch_size=100)
    seen = {}
    for i in range(300):
        key = None if i % 3 else f"k{i % 9}".encode()
        placed = part.partition(key, 40)
        if key is not None:
            assert seen.setdefault(key, placed.partition) == placed.partition


def test_keyless_records_stick_until_batch_size_then_switch_to_another_partition():
    part = DefaultPartitioner(3, random.Random(3), batch_size=100)
    placed = [part.partition(None, 30) for _ in range(12)]
    # 30-byte records: 4 fill a 100-byte batch (120 >= 100), the 5th switches
    runs = [placed[i:i + 4] for i in range(0, 12, 4)]
    for run in runs:
        assert len({p.partition for p in run}) == 1
    assert placed[4].rule == "sticky-switch" and placed[4].switched_from == placed[0].partition
    assert placed[4].partition != placed[0].partition
    assert placed[8].partition != placed[4].partition


def test_new_batch_from_linger_ends_stickiness():
    part = DefaultPartitioner(2, random.Random(0), batch_size=10_000)
    first = part.partition(None, 10).partition
    assert part.partition(None, 10).partition == first
    part.on_new_batch()
    assert part.partition(None, 10).partition == 1 - first


def test_same_seed_same_placements():
    def run(seed):
        part = DefaultPartitioner(5, random.Random(seed), batch_size=64)
        return [part.partition(None, 20).partition for _ in range(100)]
    assert run(11) == run(11)
    assert len(set(run(11))) > 1


def test_explicit_partition_wins_and_bad_ones_are_refused():
    part = DefaultPartitioner(3, random.Random(0))
    assert part.partition(b"k", 1, partition=2).partition == 2
    with pytest.raises(InvalidRequestError):
        part.partition(None, 1, partition=3)
    with pytest.raises(InvalidRequestError):
        DefaultPartitioner(0, random.Random(0))
