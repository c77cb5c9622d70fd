"""``manage.py createinstructor USERNAME [--password-env VAR]``: an instructor account
(a user in the ``instructors`` group); without ``--password-env`` the password is asked.
The password must pass ``AUTH_PASSWORD_VALIDATORS``; one that does not is refused in one line."""
from __future__ import annotations

import getpass
import os

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from kafkaviz.classroom.models import INSTRUCTORS_GROUP


class Command(BaseCommand):
    help = "Create an instructor account (or make an existing user an instructor and set the password)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password-env", metavar="VAR",
                            help="read the password from this environment variable instead of asking")
        parser.add_argument("--email", default="")

    def handle(self, *args, username: str, password_env: str | None, email: str, **options):
        if password_env:
            password = os.environ.get(password_env)
            if not password:
                raise CommandError(f"Environment variable {password_env} is unset or empty.")
        else:
            try:
                password = getpass.getpass("Password: ")
                again = getpass.getpass("Password (again): ")
            except EOFError:  # stdin ended before both answers: no traceback
                raise CommandError("No password given (the input ended); type it twice, or use --password-env.") \
                    from None
            if password != again:
                raise CommandError("The passwords differ.")
        try:
            password.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are not UTF-8, read with surrogate escapes
            raise CommandError("The password is not UTF-8 text.") from None
        User = get_user_model()
        user = User.objects.filter(username=username).first() or User(username=username, email=email)
        try:
            user.full_clean(exclude=["password"])
        except ValidationError as exc:
            raise CommandError("Username refused: " + " ".join(exc.messages)) from None
        try:
            # settings.AUTH_PASSWORD_VALIDATORS: length, common, numeric, like the username.
            validate_password(password, user)
        except ValidationError as exc:
            raise CommandError("Password refused: " + " ".join(exc.messages)) from None
        user.set_password(password)
        user.save()
        group, _ = Group.objects.get_or_create(name=INSTRUCTORS_GROUP)
        user.groups.add(group)
        self.stdout.write(f"Instructor {username} is ready; log in at /accounts/login/.")
