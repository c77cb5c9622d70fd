"""Kafka's JSON message definitions: the loader lives in :mod:`engine.protocol.schema` (the
KRaft metadata log uses it too, and the engine cannot import ``wire/``)."""
from engine.protocol.schema import *  # noqa: F401,F403
from engine.protocol.schema import __all__  # noqa: F401
