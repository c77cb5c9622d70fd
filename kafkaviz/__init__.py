"""kafkaviz web project: Django settings, the lessons app (pages) and the live app
(WebSocket consumer, sandbox runtime, frame builder). Depends on ``engine``; the
engine never depends on it."""

#: Set by ``manage.py`` for a management command that serves nothing (``lab``, ``migrate``,
#: ``createinstructor``, …): the settings then make a throwaway SECRET_KEY for this process
#: instead of refusing to load without ``DJANGO_SECRET_KEY``. Nothing else sets it, so the
#: servers (daphne on ``kafkaviz.asgi``, ``runserver``) still refuse to start without a key.
SERVES_NOTHING = False
