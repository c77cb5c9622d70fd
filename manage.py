#!/usr/bin/env python
"""Django's command-line utility for kafkaviz."""
import os
import sys


#: Commands that serve requests (or stand in for a server): they need the real DJANGO_SECRET_KEY
#: that sessions and CSRF tokens are signed with, so without one (and with debug off) the
#: settings refuse to load, as daphne on kafkaviz.asgi does.
SERVING_COMMANDS = {"runserver", "testserver", "runworker"}


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kafkaviz.settings")
    command = sys.argv[1] if len(sys.argv) > 1 else "help"
    if command not in SERVING_COMMANDS:
        # Signs nothing anyone keeps: a throwaway key for this process (kafkaviz/settings.py).
        import kafkaviz

        kafkaviz.SERVES_NOTHING = True
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:  # e.g. no DJANGO_SECRET_KEY for a server: one line, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
