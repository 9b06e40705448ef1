"""A throwaway PostgreSQL cluster for the tests: ``initdb`` + ``pg_ctl`` in a temporary
directory, listening on a free loopback port, never the machine's own service.

initdb refuses to run as root, so as root the cluster belongs to the ``postgres`` user
(Debian's package creates it) and runs through ``runuser``. Clients authenticate with a
password (scram-sha-256) taken from ``PGPASSWORD``, as a collector would.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.sshd import free_port

USER = "forensics"


def postgres_bin() -> Path | None:
    """Debian installs the server tools under /usr/lib/postgresql/VERSION/bin."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(versions[-1]).parent if versions else None


@dataclass
class PostgresServer:
    root: Path
    port: int
    password: str
    bin: Path
    owner: str | None

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def environment(self) -> dict[str, str]:
        """What a collector's environment carries: the password, and no stray settings."""
        clean = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        return {**clean, "PGPASSWORD": self.password, "PGCONNECT_TIMEOUT": "10"}

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", self.owner, "--"] if self.owner else []
        subprocess.run(
            [*prefix, *command], check=True, capture_output=True, timeout=120, cwd=self.root
        )

    def start(self) -> PostgresServer:
        password_file = self.root / "password"
        password_file.write_text(self.password + "\n")
        if self.owner:
            account = pwd.getpwnam(self.owner)
            os.chown(self.root, account.pw_uid, account.pw_gid)
            os.chown(password_file, account.pw_uid, account.pw_gid)
        self._run(
            str(self.bin / "initdb"),
            "-D", str(self.data),
            "-U", USER,
            "--pwfile", str(password_file),
            "--auth", "scram-sha-256",
            "-E", "UTF8",
            "--no-sync",
        )  # fmt: skip
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.root} -c fsync=off -c max_connections=200"
        )
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options,
            "-l", str(self.root / "server.log"), "-w", "-t", "60", "start",
        )  # fmt: skip
        return self

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def new_database(self) -> str:
        """A fresh, empty database; its URL (no password: that comes from PGPASSWORD)."""
        import psycopg

        name = f"t_{secrets.token_hex(6)}"
        with psycopg.connect(self.url(), password=self.password, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def start_postgres() -> PostgresServer | None:
    binaries = postgres_bin()
    if binaries is None:
        return None
    owner = "postgres" if os.geteuid() == 0 else None
    if owner is not None:
        try:
            pwd.getpwnam(owner)
        except KeyError:
            return None
    root = Path(tempfile.mkdtemp(prefix="forensics-pg-"))
    os.chmod(root, 0o755)
    return PostgresServer(
        root=root,
        port=free_port(),
        password=secrets.token_urlsafe(16),
        bin=binaries,
        owner=owner,
    ).start()
