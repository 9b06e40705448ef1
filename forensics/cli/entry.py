"""The ``forensics`` executable. ``lint-script`` runs in CI hooks once per file, so it is
dispatched before the full application (SSH, reports, every probe) is imported; every
other command goes through ``forensics.cli.app``. Both fail the same way
(``forensics/cli/guard.py``)."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["lint-script"]:
        from forensics.cli import guard, lint_script

        guard.run(lint_script.application(), sys.argv[2:], "forensics lint-script")
    from forensics.cli.app import main as application

    application()
