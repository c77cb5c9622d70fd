"""Kafka's protocol, generated from its JSON definitions: :mod:`.schema` parses a definition,
:mod:`.codec` builds one reader and one writer per message and version.

The wire listener (``wire/``) serves requests with these codecs; the KRaft metadata log
(``engine/kraft/metadata.py``) frames its records with them. The engine holds the generator so
that both can use it (``wire/`` imports the engine, never the other way round).
"""
