"""HTTP views of the live side: ``/healthz`` for load balancers and operators."""
from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

from .leases import live_sockets
from .runtime import get_runtime


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """This process: live sandboxes (and the most allowed), watchers, open sockets
    (``connections``; ``members``: those of room members), rooms, and bytes on disk under the data directory. ``status`` is "busy"
    when no new sandbox can be opened here (still HTTP 200: the process is healthy)."""
    runtime = get_runtime()
    # Sockets are counted from the live ones (kafkaviz/live/leases.py): a socket whose close
    # never ran is not counted, whichever router took its places.
    return JsonResponse({"status": "busy" if runtime.is_full() else "ok", **runtime.health(),
                         **live_sockets().counts()})
