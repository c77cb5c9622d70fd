"""Structured logs: one JSON object per line (``settings.LOGGING``).

Every line has ``time`` (UTC, ISO 8601), ``level``, ``logger`` and ``message``; fields
passed with ``extra={...}`` (``event``, ``sandbox`` -- the first 8 hex digits of an id,
never a whole one --, counts) are added as they are, and a traceback, when logged, is
one string field ``exc``. ``KAFKAVIZ_LOG_FORMAT=text`` switches back to plain lines.
"""
from __future__ import annotations

import json
import logging
from datetime import datetime, timezone

# Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in out:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)
