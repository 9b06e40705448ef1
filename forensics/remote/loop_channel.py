"""A long-running sh loop on a target that the client drives through its stdin: one line
written, one tick on the host (the flight recorder's). ONE SSH connection, whose other
exec channels run the collections the loop triggers (``runner``).

Unlike ``LineStream``'s loops, this one reads its stdin, so the script cannot travel on
it: the exec command decodes it into ``sh -c`` instead, inside single quotes that every
login shell (fish and csh included) passes on unchanged. When the client goes away, the
loop's stdin ends and so does the loop: nothing stays behind on the host.
"""

from __future__ import annotations

import base64
import contextlib
import subprocess
import time

from forensics.core.errors import UsageError
from forensics.core.models import HostKeySeen
from forensics.remote.host_script import Script
from forensics.remote.line_stream import LineStream, StreamEnded
from forensics.remote.transport import (
    MAX_COMMAND_BYTES,
    SUDO,
    RunOutcome,
    connect,
    open_exec,
    run,
    run_on,
)


def stdin_loop_command(text: str, sudo: bool = False) -> str:
    """An exec command that runs POSIX sh ``text`` with the channel as its stdin.

    >>> stdin_loop_command("read x", sudo=True)
    'sudo -n /bin/sh -c \\'eval "$(echo cmVhZCB4|base64 -d)"\\''
    """
    encoded = base64.b64encode(text.encode()).decode()
    shell = " ".join((*SUDO, "/bin/sh")) if sudo else "/bin/sh"
    command = f"{shell} -c 'eval \"$(echo {encoded}|base64 -d)\"'"
    if len(command) > MAX_COMMAND_BYTES:
        raise UsageError(f"the recorder's loop is {len(command)} bytes, too long for one exec")
    return command


class LoopChannel(LineStream):
    """``with LoopChannel(target, script) as loop: loop.send("s\\n"); loop.next_line(1)``."""

    host_key: HostKeySeen | None = None

    def __enter__(self) -> LoopChannel:
        if self.target.is_local:
            self._process = subprocess.Popen(
                ["/bin/sh", "-c", self.script],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            return self
        self._connection, self.host_key = connect(self.target)
        try:
            transport = self._connection.transport
            assert transport is not None
            command = stdin_loop_command(self.script, self.target.sudo)
            self._channel = open_exec(transport, command, self.target.name)
        except BaseException:
            self.close()
            raise
        return self

    def send(self, line: str) -> None:
        """Write one line to the loop; ``StreamEnded`` when it can no longer be written."""
        data = line.encode() + b"\n"
        try:
            if self._channel is not None:
                self._channel.sendall(data)
            elif self._process is not None and self._process.stdin is not None:
                self._process.stdin.write(data)
                self._process.stdin.flush()
            else:
                raise OSError("closed")
        except OSError as error:
            raise StreamEnded(f"{self.target.name}: the SSH connection dropped") from error

    def close(self) -> None:
        if self._process is not None and self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=2)  # EOF ends the loop; TERM only if it did not
        super().close()

    def run_script(self, script: Script, deadline: float) -> RunOutcome:
        """Run a collection script beside the loop: a new exec channel of the same
        connection (locally, a new /bin/sh)."""
        if self._connection is None:
            return run(self.target, script, deadline)
        return run_on(self._connection, self.host_key, script, deadline, self.target.sudo)

    def wait_line(self, deadline: float) -> str | None:
        """The next line before a ``time.monotonic()`` deadline, or None."""
        return self.next_line(max(0.0, deadline - time.monotonic()))
