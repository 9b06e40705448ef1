"""Read a long-running sh script's output line by line as it comes: locally from
``/bin/sh``, or remotely over ONE SSH connection (``transport.connect``: same host-key
policy, identity and ssh_config as ``collect``) and ONE exec channel."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from types import TracebackType

import paramiko
from fabric import Connection

from forensics.core.errors import CollectionError, Unreachable
from forensics.core.escaping import one_line
from forensics.core.models import Target
from forensics.remote.transport import READ_CHUNK, SUDO, connect, open_exec, shell_command

STDERR_KEPT = 4096
# The loops this reads write lines of a few hundred bytes; a longer one is not theirs.
MAX_LINE = 64 << 10
# How much of the host's last stderr line a message quotes.
STDERR_SHOWN = 200


class StreamEnded(CollectionError):
    """The script stopped sending before we were done with it."""


class LineStream:
    """``with LineStream(target, script) as stream: stream.next_line(timeout)``."""

    def __init__(self, target: Target, script: str) -> None:
        self.target = target
        self.script = script
        self._buffer = b""
        self._stderr = b""
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None
        self._channel: paramiko.Channel | None = None

    def __enter__(self) -> LineStream:
        if self.target.is_local:
            self._process = subprocess.Popen(
                [*SUDO, "/bin/sh", "-c", self.script]
                if self.target.sudo
                else ["/bin/sh", "-c", self.script],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        else:
            self._connection, _ = connect(self.target)
            transport = self._connection.transport
            assert transport is not None
            command = shell_command(self.script, self.target.sudo)
            try:
                self._channel = open_exec(transport, command, self.target.name)
            except Unreachable:
                self.close()
                raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGTERM)
            self._process.wait()
            for pipe in (self._process.stdout, self._process.stderr):
                if pipe is not None:
                    pipe.close()
            self._process = None

    def next_line(self, timeout_s: float) -> str | None:
        """The next complete line, or None when none came within ``timeout_s``.
        Raises ``StreamEnded`` when the script or the connection is gone."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_LINE:
                raise StreamEnded(
                    f"{self.target.name}: the host sent a line of over {MAX_LINE} bytes; "
                    "that is not the sampling loop's output (a forged or broken stream)"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._read(min(remaining, 1.0))
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def _read(self, wait_s: float) -> None:
        if self._channel is not None:
            self._read_channel(self._channel, wait_s)
        elif self._process is not None:
            self._read_process(self._process, wait_s)

    def _read_channel(self, channel: paramiko.Channel, wait_s: float) -> None:
        ready, _, _ = select.select([channel], [], [], wait_s)
        while channel.recv_stderr_ready():
            self._keep_stderr(channel.recv_stderr(READ_CHUNK))
        if ready and channel.recv_ready():
            data = channel.recv(READ_CHUNK)
            if data:
                self._buffer += data
                return
        if channel.eof_received and not channel.recv_ready():
            self._ended(channel.recv_exit_status() if channel.exit_status_ready() else None)
        transport = channel.get_transport()
        if transport is None or not transport.is_active():
            raise StreamEnded(f"{self.target.name}: the SSH connection dropped")

    def _read_process(self, process: subprocess.Popen[bytes], wait_s: float) -> None:
        assert process.stdout is not None and process.stderr is not None
        ready, _, _ = select.select([process.stdout, process.stderr], [], [], wait_s)
        if process.stderr in ready:
            self._keep_stderr(os.read(process.stderr.fileno(), READ_CHUNK))
        if process.stdout in ready:
            data = os.read(process.stdout.fileno(), READ_CHUNK)
            if data:
                self._buffer += data
            else:
                self._ended(process.wait())

    def _keep_stderr(self, data: bytes) -> None:
        self._stderr = (self._stderr + data)[-STDERR_KEPT:]

    def _ended(self, exit_status: int | None) -> None:
        said = self._stderr.decode("utf-8", "replace").strip().splitlines()
        detail = one_line(said[-1], STDERR_SHOWN) if said else f"exit status {exit_status}"
        raise StreamEnded(f"{self.target.name}: the sampling loop ended ({detail})")
