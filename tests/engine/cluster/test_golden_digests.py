"""The lessons' event streams, pinned: every scenario (both truncation rules, both fetch
protocols), a few seeded fault schedules and the storage determinism run hash to the digests
recorded in ``golden_digests.json``. A change to the engine that changes any of them must
name it (which events, which lessons, why it is still true to Kafka) and re-record with
``python -m tests.engine.cluster.test_golden_digests --record``."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest

from engine.cluster.scenarios import SCENARIOS, FETCH_PROTOCOLS, run_schedule
from engine.cluster.run import Run, make_config

GOLDEN = Path(__file__).with_name("golden_digests.json")
SCHEDULE_SEEDS = (0, 1, 2, 3, 7, 11)


def _cases() -> list[str]:
    cases = []
    for name, scenario in sorted(SCENARIOS.items()):
        for truncation in sorted(scenario.expected):
            for protocol in FETCH_PROTOCOLS:
                cases.append(f"scenario:{name}:{truncation}:{protocol}")
    cases += [f"schedule:{seed}" for seed in SCHEDULE_SEEDS]
    cases.append("log_determinism")
    return cases


def digest_of(case: str, root: str) -> str:
    kind, _, rest = case.partition(":")
    if kind == "scenario":
        name, truncation, protocol = rest.split(":")
        scenario = SCENARIOS[name]
        run = Run(scenario.seed, make_config(scenario.config, truncation=truncation, fetch_protocol=protocol),
                  root, snapshot_every=5)
        run.apply_all(scenario.commands())
        return run.event_digest()
    if kind == "schedule":
        return run_schedule(int(rest), root).event_digest()
    from tests.engine.test_log_determinism import run as log_run
    return log_run(Path(root) / "log").digest()


@pytest.mark.parametrize("case", _cases())
def test_event_stream_is_unchanged(case, tmp_path):
    golden = json.loads(GOLDEN.read_text())
    assert digest_of(case, str(tmp_path)) == golden[case], case


if __name__ == "__main__" and "--record" in sys.argv:
    out = {}
    for case in _cases():
        with tempfile.TemporaryDirectory() as root:
            out[case] = digest_of(case, root)
            print(case, out[case])
    GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
