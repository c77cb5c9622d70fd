"""Settings for the test suite: the production defaults (DEBUG off) with a test-only
secret key, so tests see what a deployment sees. Never use outside tests."""
import os

os.environ.setdefault("DJANGO_SECRET_KEY", "tests-only-not-secret-" + "k" * 40)

from kafkaviz.settings import *  # noqa: E402,F401,F403
from kafkaviz.settings import ALLOWED_HOSTS  # noqa: E402

ALLOWED_HOSTS = [*ALLOWED_HOSTS, "testserver"]

# No collectstatic before tests: WhiteNoise looks files up per request instead of
# warning at every start that STATIC_ROOT does not exist.
WHITENOISE_AUTOREFRESH = True

# pytest's log capture listens on the root logger.
LOGGING["loggers"]["kafkaviz"]["propagate"] = True  # noqa: F405
