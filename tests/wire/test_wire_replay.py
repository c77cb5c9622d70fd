"""What real clients did replays deterministically from the listener's request record."""
from __future__ import annotations

import json
import time

from wire_helpers import segment_records
from test_wire_clients import confluent_consume, confluent_produce, kafka_python_produce
from test_wire_groups import kafka_python_group

from wire.replay import replay
from wire.server import json_row
from wire.threaded import Listener


def test_a_recorded_client_session_replays_to_the_same_event_stream(tmp_path):
    live = Listener(tmp_path / "live", record_path=tmp_path / "requests.jsonl").start()
    try:
        live.call(lambda s: s.create_topic("replayed", 3, 3))
        time.sleep(0.3)
        records = [(i % 3, f"k{i}".encode(), f"v{i}".encode()) for i in range(30)]
        confluent_produce(live.bootstrap, "replayed", records[:15], "all")
        kafka_python_produce(live.bootstrap, "replayed", records[15:], 1)
        got = confluent_consume(live.bootstrap, "replayed", len(records))
        assert len(got) == len(records)
        assert kafka_python_group(live.bootstrap, "replayed", "replay-group") >= 24   # a group, with commits
        now, digest, start, entries = live.call(lambda s: (s.cluster.now_ms(), s.cluster.events.digest(),
                                                           s.start_ms, list(s.recorder.entries)))
        live_logs = live.call(lambda s: {(b, p): segment_records(s.data_dir, b, "replayed", p)
                                         for b in range(3) for p in range(3)})
    finally:
        live.stop()
    assert sum(1 for e in entries if e["kind"] == "request") > 10
    # The JSON lines on disk are the same record as the one in memory.
    on_disk = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert on_disk[:len(entries)] == [json_row(e) for e in entries]

    again = replay(on_disk[:len(entries)], tmp_path / "replay")          # settings from the record itself
    assert again.server.start_ms == start
    again.run_until(now)
    assert again.cluster.events.digest() == digest
    assert {(b, p): segment_records(again.server.data_dir, b, "replayed", p)
            for b in range(3) for p in range(3)} == live_logs
    assert any(body is not None and corr >= 0 for _, _, corr, body in again.responses)
    # The record in memory (frames as bytes) replays the same way.
    from_memory = replay(entries, tmp_path / "replay-memory")
    from_memory.run_until(now)
    assert from_memory.cluster.events.digest() == digest
