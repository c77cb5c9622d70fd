"""Who is an instructor: an active user in the ``instructors`` group (made by
``manage.py createinstructor`` or in the admin). Only instructors open rooms."""
from __future__ import annotations

from typing import Any

from .models import INSTRUCTORS_GROUP

__all__ = ["is_instructor"]


def is_instructor(user: Any) -> bool:
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return user.groups.filter(name=INSTRUCTORS_GROUP).exists()
