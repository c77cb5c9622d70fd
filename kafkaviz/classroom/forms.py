"""The join form: a code and a display name, checked on the server."""
from __future__ import annotations

import re
import unicodedata

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from .models import CODE_LENGTH, normalise_code

NAME_MAX = 40


class JoinForm(forms.Form):
    code = forms.CharField(label=_("Room code"), max_length=3 * CODE_LENGTH,
                           error_messages={"required": _("Enter the room's code, as shown on the projector.")},
                           widget=forms.TextInput(attrs={"autocomplete": "off", "autocapitalize": "characters",
                                                         "spellcheck": "false", "inputmode": "text"}))
    name = forms.CharField(label=_("Your name in the room"), max_length=NAME_MAX,
                           error_messages={"required": _("Enter a name the instructor will see.")},
                           widget=forms.TextInput(attrs={"autocomplete": "nickname"}))

    def clean_code(self) -> str:
        code = normalise_code(self.cleaned_data["code"])
        if code is None:
            raise forms.ValidationError(_("A room code is 8 letters and digits, as shown on the projector."))
        return code

    def clean_name(self) -> str:
        name = " ".join(self.cleaned_data["name"].split())
        if not name:
            raise forms.ValidationError(_("Enter a name the instructor will see."))
        if re.search(r"[<>&\"'`]", name) or any(unicodedata.category(ch).startswith("C") for ch in name):
            raise forms.ValidationError(_("Use letters, digits, spaces and simple punctuation only."))
        return name


class NewRoomForm(forms.Form):
    lesson = forms.SlugField(max_length=64)
    # The instructor's current run (the export format), filled in by the lesson page.
    run = forms.CharField(required=False, max_length=settings.KAFKAVIZ_RUNTIME["MAX_RUN_BYTES"],
                          widget=forms.HiddenInput)
