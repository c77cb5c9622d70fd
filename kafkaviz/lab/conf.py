"""The lab's settings, from the environment (``settings.KAFKAVIZ_LAB`` overrides any key).

* ``KAFKAVIZ_LAB_DIR``: where sweeps and analyses are written (one directory each); a temp
  directory by default. The Lab page lists what is there.
* ``KAFKAVIZ_LAB_LAUNCH``: "1" lets the Lab page start jobs (default: on when DEBUG is on,
  off in production, where jobs are started with ``manage.py lab``).
* ``KAFKAVIZ_LAB_MAX_RUNS``: the most runs one sweep started from the page may have.
* ``KAFKAVIZ_LAB_LOG_ROOTS``: extra directories (``:``-separated) whose log directories the
  analytics page may read; the sandboxes' data directory is always allowed.
* ``SPARK_MASTER_URL``: the Spark master jobs use (``local[*]`` by default).
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

from django.conf import settings


def lab_settings() -> dict[str, Any]:
    launch = os.environ.get("KAFKAVIZ_LAB_LAUNCH")
    roots = [p for p in os.environ.get("KAFKAVIZ_LAB_LOG_ROOTS", "").split(":") if p]
    values = {
        "DIR": os.environ.get("KAFKAVIZ_LAB_DIR") or os.path.join(tempfile.gettempdir(), "kafkaviz-lab"),
        "LAUNCH": settings.DEBUG if launch is None else launch.strip().lower() in ("1", "true", "yes", "on"),
        "MAX_RUNS": int(os.environ.get("KAFKAVIZ_LAB_MAX_RUNS", "5000")),
        "LOG_ROOTS": [settings.KAFKAVIZ_DATA_DIR, *roots],
        "MASTER": os.environ.get("SPARK_MASTER_URL") or None,
    }
    values.update(getattr(settings, "KAFKAVIZ_LAB", {}))
    return values
