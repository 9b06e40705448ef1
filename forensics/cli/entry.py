"""The ``forensics`` executable. ``lint-script`` runs in CI hooks once per file, so it is
dispatched before the full application (SSH, reports, every probe) is imported; every
other command goes through ``forensics.cli.app``."""

from __future__ import annotations

import sys

from forensics.cli.runner import run_app


def main() -> None:
    if sys.argv[1:2] == ["lint-script"]:
        from forensics.cli.lint_script import run

        run(sys.argv[2:])
    from forensics.cli.app import app

    run_app(app)
