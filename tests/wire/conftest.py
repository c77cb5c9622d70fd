"""A wire listener on free loopback ports, run on its own event loop in a thread, so
blocking clients (confluent-kafka, kafka-python, kcat) can drive it from the test."""
from __future__ import annotations


import pytest

from wire.threaded import Listener


@pytest.fixture(scope="module")
def listener(tmp_path_factory):
    lst = Listener(tmp_path_factory.mktemp("wire")).start()
    yield lst
    lst.stop()
