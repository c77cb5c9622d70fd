"""Words room.js shows (gettext), sent once in the page's room data."""
from __future__ import annotations

from django.utils.translation import gettext as _


def room_strings() -> dict[str, str]:
    return {
        "you_are": _("You are {name}."),
        "watching": _("Watching: the instructor drives this cluster."),
        "in_control": _("You have control: your commands change the room's cluster."),
        "granted_now": _("The instructor gave you control."),
        "revoked_now": _("The instructor took control back; you are watching."),
        "grant": _("Give control"),
        "revoke": _("Take control back"),
        "remove": _("Remove"),
        "remove_confirm": _("Remove {name} from the room? Their page closes and this browser cannot join again."),
        "online": _("online"),
        "offline": _("left"),
        "has_control": _("has control"),
        "forking": _("Copying the room's run into your own sandbox…"),
        "no_role": _("Nobody has that role in the cluster right now ({role})."),
        "no_frame": _("Wait until the diagrams have loaded."),
        "preset_sent": _("Sent: {label}."),
        "opening_room": _("Opening a room from this step…"),
    }
