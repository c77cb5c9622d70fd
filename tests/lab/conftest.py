"""One local Spark session (local[2]) for every Spark test of the session: starting a JVM
costs seconds, a job on a warm session a fraction of one."""
import os
import shutil

import pytest


@pytest.fixture(scope="session")
def spark():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("Java 17 is needed for the Spark tests (make system-deps installs openjdk-17-jre-headless)")
    from kafkaviz.lab.spark_jobs import spark_session

    session = spark_session("local[2]", app="kafkaviz-lab-tests")
    yield session
    session.stop()
