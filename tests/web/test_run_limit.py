"""The size limit of an exported run is one setting, KAFKAVIZ_RUNTIME["MAX_RUN_BYTES"],
which every place that enforces or shows it reads (issue 18, item 7)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from kafkaviz.classroom.forms import NewRoomForm
from kafkaviz.live.models import MAX_RUN_BYTES
from kafkaviz.live.runtime import COMMON_COMMANDS

ROOT = Path(__file__).resolve().parents[2]
LIMIT = settings.KAFKAVIZ_RUNTIME["MAX_RUN_BYTES"]


def test_every_enforcer_reads_the_one_setting():
    assert MAX_RUN_BYTES == LIMIT
    assert {f.name: f for f in COMMON_COMMANDS["import"].fields}["run"].max_length == LIMIT
    assert NewRoomForm().fields["run"].max_length == LIMIT


@pytest.mark.parametrize("filler", ['"', "x"])
def test_a_socket_message_has_room_for_the_largest_run_file(filler):
    # The page sends the file's text as a JSON string: each quote of a file full of escaped
    # quotes is escaped again, so a 64 KB file once made a 77 KB command, refused at 70,000.
    per_char = len(json.dumps(filler)) - 2
    run_file = json.dumps({"run": filler * ((LIMIT - len(json.dumps({"run": ""}))) // per_char)})
    assert LIMIT - 2 <= len(run_file.encode()) <= LIMIT
    headers = {"HX-Request": "true", "HX-Trigger": "import-form", "HX-Target": None,
               "HX-Current-URL": "https://example.org/lessons/segments/?lang=zh"}
    message = json.dumps({"cmd": "import", "run": run_file, "HEADERS": headers})
    assert len(message) <= settings.KAFKAVIZ_RUNTIME["MAX_MESSAGE_BYTES"]


def test_the_page_tells_its_file_picker_the_limit():
    html = Client().get("/lessons/segments/").content.decode()
    found = re.search(r'<script id="lesson-data" type="application/json">(.*?)</script>', html, re.S)
    data = json.loads(found[1])
    assert data["max_run_bytes"] == LIMIT


def test_the_limit_is_written_nowhere_else():
    files = [*(ROOT / "kafkaviz").rglob("*.py"), *(ROOT / "templates").rglob("*.html"),
             *(ROOT / "static" / "js").glob("*.js"), ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"]
    written = re.compile(r"64\s*\*\s*1024|\b64\s*KB\b|\b65536\b")
    found = [p.relative_to(ROOT).as_posix() for p in files
             if p.name not in ("settings.py", "serve.py")   # serve.py's 65536 are TCP ports and file handles
             and written.search(p.read_text(encoding="utf-8"))]
    assert not found, f"the run limit written outside settings.KAFKAVIZ_RUNTIME: {found}"
