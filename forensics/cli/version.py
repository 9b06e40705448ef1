"""``forensics version``."""

from __future__ import annotations

import sys

from forensics import __version__


def version_command() -> None:
    """Print the tool's version."""
    sys.stdout.write(f"forensics {__version__}\n")
