"""The web tests against PostgreSQL as well as SQLite: a throwaway PostgreSQL 15
cluster on loopback (kafkaviz.serve.start_postgres, stopped by pg_ctl / process id)
and the web suite (the fast part) run again in a subprocess with DATABASE_URL set.

Not a slow test: ``make test`` (CI) runs it, so the production database is tested on every
run (the whole of tests/web, about 70 s more). Without PostgreSQL it is skipped, except
under CI (``CI`` set), where ``make test``'s system-deps installs it: there it fails.

``KAFKAVIZ_EXPECT_DB`` makes :func:`test_the_configured_database_answers` check which
database the suite really talks to."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from kafkaviz.serve import REPO, start_postgres

HAVE_PG = Path("/usr/local/bin/pg_ctl").exists() or Path("/usr/lib/postgresql/15/bin/pg_ctl").exists()


@pytest.mark.django_db
def test_the_configured_database_answers():
    expected = os.environ.get("KAFKAVIZ_EXPECT_DB")
    if expected:
        assert connection.vendor == expected
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


@pytest.mark.skipif(os.environ.get("KAFKAVIZ_EXPECT_DB") == "postgresql", reason="already the PostgreSQL run")
def test_the_web_suite_passes_on_postgresql(tmp_path):
    if not HAVE_PG:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL 15 is not installed: `make system-deps` installs postgresql-15")
        pytest.skip("PostgreSQL 15 is not installed (make system-deps)")
    pg = start_postgres(tmp_path / "pg")
    try:
        env = {**os.environ, "DATABASE_URL": pg.url, "KAFKAVIZ_EXPECT_DB": "postgresql"}
        result = subprocess.run([sys.executable, "-m", "pytest", "tests/web", "-q", "-x", "-m", "not slow",
                                 "-p", "no:cacheprovider"], cwd=REPO, env=env, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
        assert " passed" in result.stdout.splitlines()[-1]
    finally:
        pg.stop()
