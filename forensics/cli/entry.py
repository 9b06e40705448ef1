"""The ``forensics`` executable. ``lint-script`` runs in CI hooks once per file, so it is
dispatched before the full application (SSH, reports, every probe) is imported; every
other command goes through ``forensics.cli.app``."""

from __future__ import annotations

import os
import sys

from forensics.core.exit_status import ExitStatus


def main() -> None:
    if sys.argv[1:2] != ["lint-script"]:
        from forensics.cli.app import main as application

        application()
        return
    try:
        from forensics.cli.lint_script import run

        run(sys.argv[2:])
    except KeyboardInterrupt:
        _fail("interrupted", ExitStatus.interrupted)
    except Exception as error:
        if os.environ.get("FORENSICS_DEBUG"):
            raise
        _fail(
            f"internal error: {type(error).__name__}: {error} (set FORENSICS_DEBUG=1 for a "
            "traceback, and report it)",
            ExitStatus.internal_error,
        )


def _fail(message: str, status: ExitStatus) -> None:
    sys.stderr.write(f"forensics: {message}\n")
    sys.exit(status)
