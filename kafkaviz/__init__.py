"""kafkaviz web project: Django settings, the lessons app (pages) and the live app
(WebSocket consumer, sandbox runtime, frame builder). Depends on ``engine``; the
engine never depends on it."""
