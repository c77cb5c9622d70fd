"""HTTP views of the live side: ``/healthz`` for load balancers and operators."""
from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

from .runtime import get_runtime


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """This process: live sandboxes (and the most allowed), watchers, open lesson
    sockets, rooms, and bytes on disk under the data directory. ``status`` is "busy"
    when no new sandbox can be opened here (still HTTP 200: the process is healthy)."""
    runtime = get_runtime()
    return JsonResponse({"status": "busy" if runtime.is_full() else "ok", **runtime.health()})
