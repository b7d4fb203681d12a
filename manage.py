#!/usr/bin/env python
"""Django's command-line utility for evalsite."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    if sys.argv[1:2] == ["quickstart"]:
        # quickstart is the local try-out: development settings unless told otherwise.
        os.environ.setdefault("DEBUG", "1")
        # ...but a visitor's 404 page, not Django's debug page (evalsite/errors.py).
        os.environ.setdefault("EVALSITE_STYLED_404", "1")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
