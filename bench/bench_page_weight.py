"""Bytes of a first load: the HTML of / and of each lesson page plus every script and
stylesheet it references, raw and gzip-compressed (what a browser downloads with
compression on). Goal from the issue: <= 300 KB for a lesson page.

    .venv/bin/python bench/bench_page_weight.py
"""
from __future__ import annotations

import gzip
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kafkaviz.settings")
# The development settings: the same pages and assets, with plain (unhashed) static names that
# this script reads from static/; the production settings need collectstatic and a secret key.
os.environ.setdefault("DJANGO_DEBUG", "1")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.test import Client  # noqa: E402

from kafkaviz.lessons.catalogue import SANDBOX, available_lessons  # noqa: E402

GOAL = 300 * 1024
STATIC = Path(settings.BASE_DIR) / "static"


def weight(path: str) -> tuple[int, int, int]:
    response = Client(HTTP_HOST="localhost").get(path)
    if response.status_code != 200:
        raise SystemExit(f"{path} answered {response.status_code}: nothing to weigh")
    html = response.content
    assets = re.findall(rb'(?:src|href)="/static/([^"]+)"', html)
    raw, packed = len(html), len(gzip.compress(html))
    for a in assets:
        data = (STATIC / a.decode()).read_bytes()
        raw += len(data)
        packed += len(gzip.compress(data))
    return raw, packed, len(assets)


def main() -> None:
    pages = ["/"] + [f"/lessons/{lesson.slug}/" for lesson in available_lessons()] + [f"/lessons/{SANDBOX.slug}/"]
    print(f"{'page':32} {'files':>5} {'raw':>10} {'gzip':>10}  goal <= {GOAL // 1024} KB")
    for page in pages:
        raw, packed, n = weight(page)
        mark = "ok" if packed <= GOAL else "OVER"
        print(f"{page:32} {n + 1:>5} {raw / 1024:>8.1f}KB {packed / 1024:>8.1f}KB  {mark}")


if __name__ == "__main__":
    main()
