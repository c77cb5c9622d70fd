"""The codec generator: it lives in :mod:`engine.protocol.codec` (the KRaft metadata log uses
it too, and the engine cannot import ``wire/``)."""
from engine.protocol.codec import *  # noqa: F401,F403
from engine.protocol.codec import __all__  # noqa: F401
