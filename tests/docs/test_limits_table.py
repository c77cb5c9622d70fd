"""docs/web.md's limits table says what the settings are: every row's defaults equal the
settings' defaults (read in a process without any KAFKAVIZ_*/DJANGO_* variable), and every
environment variable it names is one settings.py reads. The table had drifted (8/20 for a
sandbox's 20/40 commands per second)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SETTINGS_SOURCE = (REPO / "kafkaviz" / "settings.py").read_text(encoding="utf-8")

DUMP = """
import json, django
django.setup()
from django.conf import settings
from kafkaviz.classroom.consumers import MAX_SOCKETS_PER_MEMBER
values = {**settings.KAFKAVIZ_RUNTIME, **settings.KAFKAVIZ_ROOMS, "MAX_SOCKETS_PER_MEMBER": MAX_SOCKETS_PER_MEMBER}
for name in ("KAFKAVIZ_SHARES_PER_VISITOR", "KAFKAVIZ_SHARES_PER_ADDRESS", "KAFKAVIZ_SHARE_DAYS",
             "AXES_FAILURE_LIMIT"):
    values[name] = getattr(settings, name)
values["AXES_COOLOFF_TIME"] = settings.AXES_COOLOFF_TIME.total_seconds()
print(json.dumps(values))
"""
UNITS = {"MiB": 1024 * 1024, "min": 60}


def default_settings() -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KAFKAVIZ_", "DJANGO_")) and k not in ("DATABASE_URL", "REDIS_URL")}
    env["DJANGO_SETTINGS_MODULE"] = "kafkaviz.settings_test"
    out = subprocess.run([sys.executable, "-c", DUMP], cwd=REPO, env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table_rows() -> list[list[str]]:
    text = (REPO / "docs" / "web.md").read_text(encoding="utf-8")
    start = text.index("| limit | default | env | scope |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def number(text: str) -> float:
    value, _, unit = text.strip().partition(" ")
    return float(value) * UNITS.get(unit, 1)


def test_the_limits_table_gives_the_settings_defaults_and_their_variables():
    values = default_settings()
    rows = table_rows()
    assert len(rows) >= 20
    for names_cell, defaults_cell, env_cell, _scope in rows:
        names = re.findall(r"`(\w+)`", names_cell)
        defaults = [d for d in defaults_cell.split(" / ")]
        assert names and len(names) == len(defaults), names_cell
        for name, default in zip(names, defaults):
            assert name in values, f"{name}: not a setting the table can check"
            assert float(values[name]) == number(default), f"{name}: docs say {default}, settings {values[name]}"
        envs = names if env_cell.startswith("same name") else re.findall(r"`(\w+)`", env_cell)
        for env in envs:
            assert f'_int("{env}"' in SETTINGS_SOURCE, f"{env}: settings.py does not read it"


def test_every_runtime_limit_is_in_the_table():
    documented = {name for row in table_rows() for name in re.findall(r"`(\w+)`", row[0])}
    internal = {"FRAME_INTERVAL_MS", "MAX_EVENTS_PER_FRAME", "FULL_STATE_EVERY", "REAP_EVERY_SECONDS", "REAP_BATCH"}
    assert set(default_settings()) - documented - internal == set()
