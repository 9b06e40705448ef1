"""Run the composed script on a target: locally, or over ONE SSH connection and ONE exec.

SSH goes through fabric (ssh_config, ProxyJump) with paramiko underneath. Two pitfalls of
fabric 3 are handled here: it auto-adds unknown host keys and ignores
``UserKnownHostsFile``/``StrictHostKeyChecking``, so each client (jump hosts included) gets
our own policy and known_hosts; and it feeds stdin about a byte every 10 ms, so the script
travels inside the exec command (base64, so any login shell, fish included, passes it on
unchanged) instead of on stdin.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import paramiko
from fabric import Config, Connection

from forensics.core.errors import (
    AuthRefused,
    HostKeyRejected,
    Interrupted,
    Unreachable,
    UsageError,
)
from forensics.core.models import HostKeySeen, Target
from forensics.remote.host_script import Script
from forensics.remote.received import Received

# paramiko logs the failures of its transport thread (a host that never sends its banner:
# a 20-line traceback) to a logger without handlers, which Python then prints on stderr.
# Each failure reaches the operator once, as the one line of the exception it raises here.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

_PUBLIC_KEY_TYPES = {
    b"ssh-ed25519", b"ssh-rsa", b"ssh-dss", b"ecdsa-sha2-nistp256", b"ecdsa-sha2-nistp384",
    b"ecdsa-sha2-nistp521", b"sk-ssh-ed25519@openssh.com", b"sk-ecdsa-sha2-nistp256@openssh.com",
}  # fmt: skip

# Linux refuses a single argv string over 128 KiB (MAX_ARG_STRLEN); keep a margin.
MAX_COMMAND_BYTES = 120 * 1024
READ_CHUNK = 1 << 16
# A login shell's stderr is a few lines; more is noise or an attack, counted but dropped.
RUN_STDERR_KEPT = 64 << 10
# ``RunOutcome.ended_early`` when the operator pressed Ctrl-C during the run.
INTERRUPTED = "interrupted (SIGINT)"
# How long a failed SSH handshake's thread gets to record why it failed.
_THREAD_END_S = 1.0
# How long the local script gets, after TERM, to remove its temp dir before KILL.
STOP_GRACE_S = 1.0
# -n: fail at once, with one line on stderr, where sudo would ask for a password.
SUDO = ("sudo", "-n")


@dataclass
class RunOutcome:
    """What one run of the script gave back, however it ended; never more than the caps."""

    stdout: Received
    stderr: Received
    exit_status: int | None
    ended_early: str | None
    host_key: HostKeySeen | None = None
    user: str | None = None
    port: int | None = None

    @property
    def stream(self) -> bytes:
        return bytes(self.stdout.kept)

    @property
    def stderr_text(self) -> str:
        return self.stderr.kept.decode("utf-8", "replace")


def run(target: Target, script: Script, deadline: float) -> RunOutcome:
    """Run ``script`` on ``target`` until it ends or ``deadline`` (a ``time.monotonic()``),
    keeping at most what the script can write on stdout and ``RUN_STDERR_KEPT`` of stderr."""
    if target.is_local:
        return run_local(script, deadline, target.sudo)
    return run_ssh(target, script, deadline)


def _streams(script: Script) -> tuple[Received, Received]:
    return Received(cap=script.max_output_bytes), Received(cap=RUN_STDERR_KEPT)


def _too_much(stdout: Received) -> str:
    return (
        f"the host sent more than the {stdout.cap} bytes the script can write on stdout "
        "(not our script's output, or a forged stream); stopped reading"
    )


def run_local(script: Script, deadline: float, sudo: bool = False) -> RunOutcome:
    process = subprocess.Popen(
        [*SUDO, "/bin/sh", "-c", script.text] if sudo else ["/bin/sh", "-c", script.text],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stderr is not None
    stdout, stderr = _streams(script)
    into = {process.stdout.fileno(): stdout, process.stderr.fileno(): stderr}
    # Stop early enough that the script's own cleanup (TERM, then KILL) fits in the deadline.
    stop_at = deadline - min(STOP_GRACE_S, max(0.0, deadline - time.monotonic()) / 10)
    ended_early = None
    while into and ended_early is None:
        remaining = stop_at - time.monotonic()
        if remaining <= 0:
            ended_early = "the collection deadline passed"
            break
        try:
            ready, _, _ = select.select(list(into), [], [], min(remaining, 1.0))
        except Interrupted:
            ended_early = INTERRUPTED
            break
        for fd in ready:
            data = os.read(fd, READ_CHUNK)
            if data:
                into[fd].take(data)
            else:
                del into[fd]
        if stdout.over:
            ended_early = _too_much(stdout)
    exit_status = _end_local(process, deadline) if ended_early else process.wait()
    process.stdout.close()
    process.stderr.close()
    if ended_early:
        _remove_local_leftovers(script, sudo)
    return RunOutcome(
        stdout=stdout,
        stderr=stderr,
        exit_status=None if ended_early else exit_status,
        ended_early=ended_early,
        user=_local_user(),
    )


def _end_local(process: subprocess.Popen[bytes], deadline: float) -> int:
    """TERM the script's process group so its EXIT trap removes its temp dir; KILL what is
    left after the grace, or by the deadline when that comes first."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    grace = min(STOP_GRACE_S, max(deadline - time.monotonic(), STOP_GRACE_S / 10))
    try:
        return process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        return process.wait()


def _remove_local_leftovers(script: Script, sudo: bool) -> None:
    """A script killed before its EXIT trap ran leaves its temp dir (raw process tables,
    command lines): remove it from here. The nonce names it, and nothing else."""
    roots = {os.environ.get("TMPDIR") or "/tmp", "/tmp", "/dev/shm"}
    for root in roots:
        for left in Path(root).glob(f"forensics.*.{script.nonce}"):
            if sudo:
                subprocess.run(
                    [*SUDO, "rm", "-rf", "--", str(left)],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=STOP_GRACE_S * 5,
                    check=False,
                )
            else:
                shutil.rmtree(left, ignore_errors=True)


def _local_user() -> str | None:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return None


def remote_command(script: Script, sudo: bool = False) -> str:
    """The exec command: decodes the script and hands it to /bin/sh, in any login shell;
    with ``sudo``, to ``sudo -n /bin/sh``, so the script runs as root.

    >>> from forensics.remote.host_script import compose
    >>> remote_command(compose([]), sudo=True).endswith("|base64 -d|sudo -n /bin/sh")
    True
    """
    return shell_command(script.text, sudo)


def shell_command(text: str, sudo: bool = False) -> str:
    """An exec command that runs POSIX sh ``text`` whatever the login shell is."""
    encoded = base64.b64encode(text.encode()).decode()
    shell = " ".join((*SUDO, "/bin/sh")) if sudo else "/bin/sh"
    command = f"echo {encoded}|base64 -d|{shell}"
    if len(command) > MAX_COMMAND_BYTES:
        raise UsageError(
            f"the composed script is {len(command)} bytes, over the {MAX_COMMAND_BYTES} "
            "that one SSH exec can carry; run fewer probes (--probe)"
        )
    return command


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH-style SHA256 fingerprint of a host key."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


class _HostKeyPolicy(paramiko.MissingHostKeyPolicy):
    """Strict by default; with ``accept_new`` trust on first use, saved to known_hosts."""

    def __init__(self, known_hosts: Path, accept_new: bool) -> None:
        self.known_hosts = known_hosts
        self.accept_new = accept_new
        self.accepted: list[tuple[str, paramiko.PKey]] = []

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        if not self.accept_new:
            raise HostKeyRejected(
                f"host key {key.get_name()} {fingerprint(key)} is not in {self.known_hosts}; "
                "check it, then re-run with --accept-new-host-key"
            )
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.known_hosts.parent.mkdir(parents=True, exist_ok=True)
        with self.known_hosts.open("a") as handle:
            handle.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        self.accepted.append((hostname, key))


def _prepare_client(connection: Connection, policy: _HostKeyPolicy) -> None:
    client = paramiko.SSHClient()
    if policy.known_hosts.exists():
        try:
            client.load_host_keys(str(policy.known_hosts))
        except (OSError, paramiko.SSHException) as error:
            raise UsageError(f"cannot read known_hosts {policy.known_hosts}: {error}") from error
    client.set_missing_host_key_policy(policy)
    connection.client = client
    gateway = connection.gateway
    if isinstance(gateway, Connection):
        _prepare_client(gateway, policy)


def _connection(target: Target) -> Connection:
    overrides: dict[str, object] = {"load_ssh_configs": True}
    config_path = target.ssh_config
    if config_path is None:
        default = Path.home() / ".ssh" / "config"
        config_path = str(default) if default.exists() else None
    if config_path is not None and not Path(config_path).is_file():
        raise UsageError(f"SSH config file not found: {config_path}")
    config = Config(overrides=overrides, runtime_ssh_path=config_path)
    if config_path is None:
        config.load_ssh_config()
    connect_kwargs: dict[str, object] = {
        "banner_timeout": target.connect_timeout,
        "auth_timeout": target.connect_timeout,
    }
    if target.identity:
        identity = Path(target.identity).expanduser()
        _check_identity(identity)
        connect_kwargs["key_filename"] = [str(identity)]
        connect_kwargs["look_for_keys"] = False
        connect_kwargs["allow_agent"] = False
    assert target.host is not None
    connection = Connection(
        target.host,
        user=target.user,
        port=target.port,
        config=config,
        gateway=False,
        connect_timeout=target.connect_timeout,
        connect_kwargs=connect_kwargs,
    )
    connection.gateway = _jump_hosts(target, connection, config, connect_kwargs)
    return connection


def _jump_hosts(
    target: Target, connection: Connection, config: Config, connect_kwargs: dict[str, object]
) -> Connection | str | None:
    """The chain of jump hosts, from ``--proxy-jump``/the inventory or else ssh_config's
    ProxyJump; fabric silently drops a whole chain with a hop named like the target, so the
    chain is built here, and a hop that is the target itself is refused."""
    hops = target.proxy_jump or connection.ssh_config.get("proxyjump")
    if not hops or hops.strip().lower() == "none":
        proxy_command = connection.ssh_config.get("proxycommand")
        return str(proxy_command) if proxy_command else None
    gateway: Connection | None = None
    for hop in (word.strip() for word in hops.split(",")):
        if not hop:
            continue
        jump = Connection(
            hop,
            config=config,
            gateway=gateway,
            connect_timeout=target.connect_timeout,
            connect_kwargs=connect_kwargs,
        )
        if (jump.host, jump.port) == (connection.host, connection.port):
            raise UsageError(
                f"{target.name}: the jump host {hop!r} is the target itself "
                f"({connection.host}:{connection.port}); a hop must be another machine "
                f"(for a ssh_config wildcard, exclude it: Host * !{target.host})"
            )
        gateway = jump
    return gateway


def _check_identity(path: Path) -> None:
    """Refuse, before connecting, an identity file that cannot be a private key."""
    if not path.is_file():
        raise UsageError(f"identity file not found: {path}")
    try:
        with path.open("rb") as handle:
            start = handle.read(64)
    except OSError as error:
        raise UsageError(f"identity file {path}: cannot read it ({error.strerror})") from error
    if start.split(b" ", 1)[0] in _PUBLIC_KEY_TYPES or path.suffix == ".pub":
        private = path.with_suffix("") if path.suffix == ".pub" else None
        hint = f"; pass the private key ({private})" if private else "; pass the private key"
        raise UsageError(f"identity file {path} is a public key{hint}")
    try:
        paramiko.PKey.from_path(path)
    except paramiko.PasswordRequiredException:
        return  # a real key; paramiko says so itself when it cannot use it
    except (paramiko.SSHException, ValueError, UnicodeDecodeError, TypeError) as error:
        raise UsageError(
            f"identity file {path} is not a private key paramiko can read ({_reason(error)[:120]})"
        ) from error


def connect(target: Target) -> tuple[Connection, HostKeySeen]:
    """Open ONE SSH connection to ``target`` under our host-key policy, or raise the
    exception the operator can act on (unreachable, auth refused, host key rejected),
    naming the jump host when a hop failed. The caller closes the connection."""
    connection = _connection(target)
    known_hosts = Path(target.known_hosts or Path.home() / ".ssh" / "known_hosts").expanduser()
    policy = _HostKeyPolicy(known_hosts, target.accept_new_host_key)
    _prepare_client(connection, policy)
    hops: list[Connection] = []
    gateway = connection.gateway
    while isinstance(gateway, Connection):
        hops.insert(0, gateway)
        gateway = gateway.gateway
    try:
        for hop in hops:
            _open(hop, f"jump host {hop.user}@{hop.host}:{hop.port}", target, known_hosts)
        where = f"{connection.user}@{connection.host}:{connection.port}"
        _open(connection, where, target, known_hosts)
    except BaseException:
        for opened in (connection, *reversed(hops)):
            opened.close()
        raise
    transport = connection.transport
    assert transport is not None
    key = transport.get_remote_server_key()
    host_key = HostKeySeen(
        key_type=key.get_name(),
        sha256_fingerprint=fingerprint(key),
        trust="accepted_new" if policy.accepted else "known_hosts",
    )
    return connection, host_key


def _open(connection: Connection, where: str, target: Target, known_hosts: Path) -> None:
    """Open one hop (fabric opens the hops before it, already open), or raise the one
    exception the operator can act on, naming ``where``."""
    try:
        connection.open()
    except HostKeyRejected as error:
        raise HostKeyRejected(f"{where}: {error.message}") from error
    except paramiko.BadHostKeyException as error:
        name = (
            connection.host if connection.port == 22 else f"[{connection.host}]:{connection.port}"
        )
        raise HostKeyRejected(
            f"{where}: HOST KEY CHANGED: it presented {fingerprint(error.key)}, "
            f"{known_hosts} expects {fingerprint(error.expected_key)}; someone may be "
            "intercepting, or the host was rebuilt: verify, then remove the old line "
            f"(ssh-keygen -R '{name}' -f {known_hosts})"
        ) from error
    except paramiko.AuthenticationException as error:
        raise AuthRefused(
            f"{where}: authentication refused ({error}); check --user and --identity"
        ) from error
    except paramiko.ssh_exception.NoValidConnectionsError as error:
        raise Unreachable(f"{where}: {_refusal(error)}") from error
    except socket.gaierror as error:
        raise Unreachable(
            f"{where}: cannot resolve host name ({error.strerror}); check the name or "
            "the SSH config alias"
        ) from error
    except TimeoutError as error:
        raise Unreachable(
            f"{where}: no answer within {target.connect_timeout:g}s; "
            "check the address and port, or raise --connect-timeout"
        ) from error
    except (OSError, paramiko.SSHException, EOFError) as error:
        raise Unreachable(f"{where}: {_failure(connection, error, target)}") from error


def run_ssh(target: Target, script: Script, deadline: float) -> RunOutcome:
    command = remote_command(script, target.sudo)
    connection, host_key = connect(target)
    try:
        transport = connection.transport
        assert transport is not None
        outcome = _exec(transport, command, script, deadline)
        outcome.host_key = host_key
        outcome.user = connection.user
        outcome.port = connection.port
        return outcome
    finally:
        connection.close()


def _refusal(error: paramiko.ssh_exception.NoValidConnectionsError) -> str:
    causes = {getattr(cause, "errno", None) for cause in error.errors.values()}
    if causes == {errno.ECONNREFUSED}:
        return "connection refused: nothing listens on that port (is sshd up? right --port?)"
    if causes & {errno.EHOSTUNREACH, errno.ENETUNREACH}:
        return "no route to host: the address is not reachable from here"
    return f"cannot connect: {_reason(error)}"


def _failure(connection: Connection, error: BaseException, target: Target) -> str:
    """Why the SSH handshake failed, from the transport thread's own exception when it has
    one (paramiko then raises a vaguer one, such as "No existing session")."""
    client = connection.client
    transport = client.get_transport() if client is not None else None
    if transport is not None and "no existing session" in str(error).lower():
        transport.join(_THREAD_END_S)  # the thread may not have recorded its failure yet
    cause = (transport.get_exception() if transport is not None else None) or error
    if "banner" in str(cause).lower():
        return (
            f"no SSH banner within {target.connect_timeout:g}s: something accepts connections "
            "on that port but does not speak SSH (a stalled sshd or another service); "
            "check the port, or raise --connect-timeout"
        )
    return f"cannot connect: {_reason(cause)}"


def _reason(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def _exec(
    transport: paramiko.Transport, command: str, script: Script, deadline: float
) -> RunOutcome:
    channel = transport.open_session()
    channel.exec_command(command)
    stdout, stderr = _streams(script)
    ended_early = None
    while ended_early is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            ended_early = "the collection deadline passed"
            break
        try:
            ready, _, _ = select.select([channel], [], [], min(remaining, 1.0))
        except Interrupted:
            ended_early = INTERRUPTED
            break
        if not ready:
            if not transport.is_active():
                ended_early = "the SSH connection dropped"
            continue
        progressed = False
        while channel.recv_stderr_ready():
            stderr.take(channel.recv_stderr(READ_CHUNK))
            progressed = True
        if channel.recv_ready():
            data = channel.recv(READ_CHUNK)
            stdout.take(data)
            if stdout.over:
                ended_early = _too_much(stdout)
            if data:
                continue
        if channel.eof_received and not channel.recv_ready() and not progressed:
            break
        if channel.closed:
            break
    exit_status: int | None = None
    if ended_early is None:
        while channel.recv_stderr_ready():
            stderr.take(channel.recv_stderr(READ_CHUNK))
        if channel.exit_status_ready() or _wait_status(channel, deadline):
            exit_status = channel.recv_exit_status()
        if exit_status == -1:
            exit_status = None
            ended_early = "the SSH session ended without an exit status"
    channel.close()
    return RunOutcome(
        stdout=stdout, stderr=stderr, exit_status=exit_status, ended_early=ended_early
    )


def _wait_status(channel: paramiko.Channel, deadline: float) -> bool:
    until = min(deadline, time.monotonic() + 5)
    while time.monotonic() < until:
        if channel.exit_status_ready():
            return True
        time.sleep(0.02)
    return False
