"""Where the sweep history lives: a SQLite file (the default, no setup) or a PostgreSQL
database shared by several collectors.

Chosen by ``--history``, else ``FORENSICS_HISTORY_URL``, else the inventory's ``history:``,
else ``OUT/history.sqlite``. A ``postgresql://`` (or ``postgres://``) URL selects PostgreSQL;
its password comes from ``PGPASSWORD``, ``~/.pgpass`` or a ``passfile=`` parameter, as libpq
reads them, and never from the inventory.

>>> history_location(None, None, Path("out"), environ={})
PosixPath('out/history.sqlite')
>>> history_location(None, "postgresql://forensics@db/fleet", Path("out"), environ={})
'postgresql://forensics@db/fleet'
>>> history_location(None, "postgresql://f:hunter2@db/fleet", Path("out"), environ={})
Traceback (most recent call last):
...
forensics.core.errors.UsageError: inventory history: a password in the URL; put it in ...
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from forensics.core.errors import UsageError
from forensics.fleet.store import History, HistoryStore, Warn

ENVIRONMENT = "FORENSICS_HISTORY_URL"
_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(_SCHEMES)


def history_location(
    option: str | None,
    inventory: str | None,
    out: Path,
    environ: Mapping[str, str] = os.environ,
) -> str | Path:
    """The history to use: a PostgreSQL URL or a SQLite path."""
    for source, value in (
        ("--history", option),
        (ENVIRONMENT, environ.get(ENVIRONMENT)),
        ("inventory history", inventory),
    ):
        if not value:
            continue
        if not value.startswith(_SCHEMES):
            return Path(value)
        try:
            password = urlsplit(value).password
        except ValueError as error:
            raise UsageError(f"{source}: not a PostgreSQL URL ({error})") from error
        if password and source == "inventory history":
            raise UsageError(
                f"{source}: a password in the URL; put it in PGPASSWORD, ~/.pgpass or a "
                "passfile= file instead"
            )
        return value
    return out / "history.sqlite"


def open_history(location: str | Path, warn: Warn) -> HistoryStore:
    """Open for a sweep: a store that warns and turns itself off rather than fail it."""
    if is_postgres(location):
        from forensics.fleet.store_postgres import PostgresHistory

        return PostgresHistory.open(str(location), warn)
    return History.open(Path(location), warn)


def open_history_read_only(location: str | Path) -> HistoryStore:
    """Open for reading; ``UsageError`` when it cannot be read."""
    if is_postgres(location):
        from forensics.fleet.store_postgres import PostgresHistory

        return PostgresHistory.open_read_only(str(location))
    path = Path(location)
    if not path.exists():
        raise UsageError(f"no history at {path}: run `forensics sweep` first, or pass --history")
    return History.open_read_only(path)
