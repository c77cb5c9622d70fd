"""``python manage.py createinstructor USERNAME``: an account that may open rooms."""
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
    help = "Create an instructor account (or make an existing user an instructor)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password-env", metavar="VAR",
                            help="read the password from this environment variable (for scripts); "
                                 "otherwise it is asked for")
        parser.add_argument("--email", default="")

    def handle(self, *args, username: str, password_env: str | None, email: str, **options):
        User = get_user_model()
        try:
            User._meta.get_field("username").run_validators(username)
        except ValidationError as exc:
            raise CommandError(f"username: {' '.join(exc.messages)}") from None
        if not username:
            raise CommandError("username: may not be empty")
        user = User.objects.filter(username=username).first()
        if password_env:
            password = os.environ.get(password_env)
            if not password:
                raise CommandError(f"--password-env {password_env}: that environment variable is not set or empty")
        elif user is None:
            password = getpass.getpass("Password: ")
            if password != getpass.getpass("Password (again): "):
                raise CommandError("the passwords differ")
        else:
            password = None
        if password is not None:
            try:
                validate_password(password, user)
            except ValidationError as exc:
                raise CommandError(f"password: {' '.join(exc.messages)}") from None
        created = user is None
        if created:
            user = User.objects.create_user(username=username, email=email, password=password)
        elif password is not None:
            user.set_password(password)
            user.save()
        group, _ = Group.objects.get_or_create(name=INSTRUCTORS_GROUP)
        user.groups.add(group)
        self.stdout.write(f"{'Created' if created else 'Updated'} instructor {username!r}; sign in at /accounts/login/")
