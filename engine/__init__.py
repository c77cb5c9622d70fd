"""kafkaviz's engine: Kafka's storage and replication, on real files, in one process.

Pure Python: this package never imports Django, Channels or plotly (a test checks).
Time comes from an injected :class:`engine.clock.VirtualClock` and randomness from one
seeded ``random.Random``, so any run replays exactly from its seed and commands.
"""
