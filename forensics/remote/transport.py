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
import threading
import time
from collections.abc import Iterator
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
from forensics.remote.known_hosts import KnownHosts, host_names
from forensics.remote.received import Received
from forensics.remote.ssh_config import SshSettings, jump_chain, resolve

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


class _QuietTransport(paramiko.Transport):
    """paramiko's transport, waking once a second instead of ten times while the host is
    quiet: its thread polls its socket with this timeout only to notice a close, a
    keepalive or a handshake deadline (each still noticed within a second), and a sweep
    of 64 hosts that each sit through a 2 s process snapshot paid ~0.3 s of CPU for it."""

    _active_check_timeout = 1.0


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
    """One hop's host key judged as OpenSSH judges it, against every known_hosts file the
    hop's settings name (or ``--known-hosts``): paramiko is given no keys of its own, so it
    always asks here. Unknown keys are refused unless trust on first use was chosen
    (``--accept-new-host-key`` or ``StrictHostKeyChecking accept-new``; ``no`` is taken as
    ``accept-new``, and says so); a changed or revoked key, never."""

    def __init__(self, settings: SshSettings, target: Target) -> None:
        self.settings = settings
        files = (
            [Path(target.known_hosts).expanduser()]
            if target.known_hosts
            else settings.known_hosts_paths()
        )
        self.files = files
        self.write_to = files[0]
        try:
            self.known = KnownHosts.load(files)
        except OSError as error:
            raise UsageError(str(error)) from error
        strict = settings.strict_host_key_checking
        self.accept_new = target.accept_new_host_key or strict in ("accept-new", "false")
        self.note = (
            "StrictHostKeyChecking no in the SSH config is treated as accept-new: an unknown "
            "key was recorded; a changed key is still refused"
            if strict == "false" and not target.accept_new_host_key
            else None
        )
        self.accepted: list[tuple[str, paramiko.PKey]] = []

    @property
    def names(self) -> list[str]:
        return host_names(self.settings.hostname, self.settings.port, self.settings.host_key_alias)

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        seen = f"{key.get_name()} {fingerprint(key)}"
        judgement = self.known.judge(self.names, key.get_name(), key.get_base64())
        line = judgement.line
        if judgement.verdict == "known":
            return
        if judgement.verdict == "revoked" and line is not None:
            raise HostKeyRejected(
                f"host key {seen} is marked @revoked in {line.where}; refusing to connect"
            )
        if judgement.verdict == "changed" and line is not None:
            expected = ", ".join(
                f"{_line_fingerprint(known.key)} ({known.where})" for known in judgement.expected
            )
            raise HostKeyRejected(
                f"HOST KEY CHANGED: it presented {seen}, known_hosts expects {expected}; "
                "someone may be intercepting, or the host was rebuilt: verify, then remove "
                f"the old line (ssh-keygen -R '{self.names[0]}' -f {line.path})"
            )
        if judgement.verdict == "cert_authority_only" and line is not None:
            raise HostKeyRejected(
                f"{line.where} trusts a certificate authority (@cert-authority) for this "
                "host, but the SSH library this tool uses (paramiko) cannot verify host "
                f"certificates; the host presented {seen}: check it, then add it to "
                f"known_hosts (ssh-keyscan -p {self.settings.port} {self.settings.hostname})"
            )
        if not self.accept_new:
            checked = ", ".join(str(path) for path in self.files)
            raise HostKeyRejected(
                f"host key {seen} is not in known_hosts ({checked}); check it, then re-run "
                "with --accept-new-host-key"
            )
        self.write_to.parent.mkdir(parents=True, exist_ok=True)
        with self.write_to.open("a") as handle:
            handle.write(f"{self.names[0]} {key.get_name()} {key.get_base64()}\n")
        self.accepted.append((self.names[0], key))


def _line_fingerprint(key_base64: str) -> str:
    try:
        digest = hashlib.sha256(base64.b64decode(key_base64)).digest()
    except ValueError:
        return "an unreadable key"
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


@dataclass
class _Hop:
    """One connection of the chain: jump hosts first, the target last."""

    where: str
    settings: SshSettings
    connection: Connection
    policy: _HostKeyPolicy


def _plan(target: Target) -> list[_Hop]:
    """Resolve the target and its jump hosts as ssh would (ssh_config, then the command
    line's --user/--port/--proxy-jump winning), each hop with its own keys and known_hosts."""
    assert target.host is not None
    config = Path(target.ssh_config).expanduser() if target.ssh_config else None
    settings = resolve(
        target.host, config=config, user=target.user, port=target.port,
        proxy_jump=target.proxy_jump,
    )  # fmt: skip
    hops: list[_Hop] = []
    chain = jump_chain(settings, config)
    gateway: Connection | str | None = chain.first_command
    for hop in chain.hops:
        if (hop.hostname, hop.port) == (settings.hostname, settings.port):
            raise UsageError(
                f"{target.name}: the jump host {hop.host!r} is the target itself "
                f"({settings.hostname}:{settings.port}); a hop must be another machine "
                f"(for a ssh_config wildcard, exclude it: Host * !{target.host})"
            )
        connection = _connection_for(hop, target, gateway)
        hops.append(
            _Hop(f"jump host {hop.user}@{hop.hostname}:{hop.port}", hop, connection,
                 _HostKeyPolicy(hop, target))
        )  # fmt: skip
        gateway = connection
    if not chain.hops and settings.proxy_command and settings.proxy_command.lower() != "none":
        gateway = settings.expand(settings.proxy_command)
    connection = _connection_for(settings, target, gateway)
    where = f"{settings.user}@{settings.hostname}:{settings.port}"
    hops.append(_Hop(where, settings, connection, _HostKeyPolicy(settings, target)))
    return hops


def _connection_for(
    settings: SshSettings, target: Target, gateway: Connection | str | None
) -> Connection:
    timeout = _connect_timeout(settings, target)
    connection = Connection(
        settings.hostname,
        user=settings.user,
        port=settings.port,
        config=Config(overrides={"load_ssh_configs": False}),
        gateway=gateway,
        connect_timeout=timeout,
        connect_kwargs={
            "banner_timeout": timeout,
            "auth_timeout": timeout,
            "transport_factory": _QuietTransport,
            **_credentials(settings, target),
        },
    )
    return connection


def _connect_timeout(settings: SshSettings, target: Target) -> float:
    """``--connect-timeout`` when given, else the config's ``ConnectTimeout``, else 10 s."""
    default = Target.model_fields["connect_timeout"].default
    if target.connect_timeout == default and settings.connect_timeout:
        return float(settings.connect_timeout)
    return target.connect_timeout


def _credentials(settings: SshSettings, target: Target) -> dict[str, object]:
    """Which keys to offer: ``-i`` alone when given; else the config's IdentityFile list
    (only those that exist, like ssh), a CertificateFile attached to its key, and the agent
    unless ``IdentitiesOnly`` or ``IdentityAgent none``."""
    if target.identity:
        identity = Path(target.identity).expanduser()
        _check_identity(identity)
        return {"key_filename": [str(identity)], "look_for_keys": False, "allow_agent": False}
    keys = [path for path in settings.identity_paths() if path.is_file()]
    credentials: dict[str, object] = {
        "key_filename": [str(path) for path in keys],
        "look_for_keys": False,
        "allow_agent": _agent_path(settings) != "none",
    }
    if settings.identities_only and settings.identity_files_given:
        credentials["allow_agent"] = False
    for certificate in settings.certificate_paths():
        signed = _certified_key(certificate, keys)
        if signed is not None:
            credentials["pkey"] = signed
            break
    return credentials


def _certified_key(certificate: Path, keys: list[Path]) -> paramiko.PKey | None:
    """The private key a user certificate belongs to, with the certificate attached."""
    if not certificate.is_file():
        return None
    candidates = [*keys, Path(str(certificate).removesuffix("-cert.pub"))]
    for path in candidates:
        if not path.is_file():
            continue
        try:
            key = paramiko.PKey.from_path(path)
            key.load_certificate(str(certificate))
        except (paramiko.SSHException, ValueError, OSError, TypeError):
            continue
        return key
    raise UsageError(
        f"CertificateFile {certificate}: no identity file holds the key it certifies "
        f"(tried {', '.join(str(p) for p in candidates)})"
    )


def _agent_path(settings: SshSettings) -> str | None:
    """The agent socket ``IdentityAgent`` names: a path, ``SSH_AUTH_SOCK``, ``$VAR`` or
    ``none``; None for the environment's own."""
    agent = settings.identity_agent
    if agent is None or agent == "SSH_AUTH_SOCK":
        return None
    if agent.lower() == "none":
        return "none"
    if agent.startswith("$"):
        return os.environ.get(agent[1:], "none")
    return settings.expand(agent)


_AGENT_LOCK = threading.Lock()


@contextlib.contextmanager
def _agent(settings: SshSettings) -> Iterator[None]:
    """paramiko reads the agent socket from ``SSH_AUTH_SOCK``: point it at the config's
    ``IdentityAgent`` while this hop authenticates (one hop at a time)."""
    path = _agent_path(settings)
    if path is None or path == "none":
        yield
        return
    with _AGENT_LOCK:
        before = os.environ.get("SSH_AUTH_SOCK")
        os.environ["SSH_AUTH_SOCK"] = path
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("SSH_AUTH_SOCK", None)
            else:
                os.environ["SSH_AUTH_SOCK"] = before


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
    hops = _plan(target)
    for hop in hops:
        client = paramiko.SSHClient()
        client.set_missing_host_key_policy(hop.policy)
        hop.connection.client = client
    try:
        for hop in hops:
            with _agent(hop.settings):
                _open(hop, target)
            if hop.settings.server_alive_interval and hop.connection.transport is not None:
                hop.connection.transport.set_keepalive(hop.settings.server_alive_interval)
    except BaseException:
        for hop in reversed(hops):
            hop.connection.close()
        raise
    last = hops[-1]
    transport = last.connection.transport
    assert transport is not None
    key = transport.get_remote_server_key()
    host_key = HostKeySeen(
        key_type=key.get_name(),
        sha256_fingerprint=fingerprint(key),
        trust="accepted_new" if last.policy.accepted else "known_hosts",
        note=last.policy.note if last.policy.accepted else None,
    )
    return last.connection, host_key


def _open(hop: _Hop, target: Target) -> None:
    """Open one hop (those before it are open already), or raise the one exception the
    operator can act on, naming the hop."""
    where, connection = hop.where, hop.connection
    timeout = _connect_timeout(hop.settings, target)
    try:
        connection.open()
    except HostKeyRejected as error:
        raise HostKeyRejected(f"{where}: {error.message}") from error
    except paramiko.AuthenticationException as error:
        raise AuthRefused(
            f"{where}: authentication refused ({error}); check --user and --identity "
            "(or the SSH config's User and IdentityFile)"
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
            f"{where}: no answer within {timeout:g}s; "
            "check the address and port, or raise --connect-timeout"
        ) from error
    except (OSError, paramiko.SSHException, EOFError) as error:
        raise Unreachable(f"{where}: {_failure(connection, error, target)}") from error


def explain(target: Target) -> str:
    """What ``--explain-ssh`` prints: the resolved settings in ``ssh -G``'s words, then, as
    comments, what the tool makes of them (files read, keys found, known_hosts, hops)."""
    hops = _plan(target)
    last = hops[-1].settings
    lines = last.ssh_g_lines()
    lines.append(f"# config files read: {', '.join(last.files_read) or 'none'}")
    lines += [f"# {note}" for note in last.notes]
    for hop in hops:
        settings = hop.settings
        keys = [
            f"{path} ({'found' if path.is_file() else 'missing'})"
            for path in settings.identity_paths()
        ]
        known = ", ".join(
            f"{path} ({'found' if path.is_file() else 'missing'})" for path in hop.policy.files
        )
        lines.append(f"# {hop.where}:")
        if isinstance(hop.connection.gateway, str):
            lines.append(f"#   reached through ProxyCommand: {hop.connection.gateway}")
        lines.append(f"#   identity files: {'; '.join(keys) or 'none'}")
        lines.append(f"#   known_hosts: {known}; key filed as {', '.join(hop.policy.names)}")
        mode = "accept new keys" if hop.policy.accept_new else "refuse unknown keys"
        lines.append(f"#   host key checking: {mode}; a changed or revoked key is refused")
    return "\n".join(lines) + "\n"


def run_ssh(target: Target, script: Script, deadline: float) -> RunOutcome:
    command = remote_command(script, target.sudo)
    connection, host_key = connect(target)
    try:
        return run_on(connection, host_key, script, deadline, target.sudo, command)
    finally:
        connection.close()


def run_on(
    connection: Connection,
    host_key: HostKeySeen | None,
    script: Script,
    deadline: float,
    sudo: bool = False,
    command: str | None = None,
) -> RunOutcome:
    """Run ``script`` in a new exec channel of an already open ``connection`` (the flight
    recorder's: the collection it triggers needs no second handshake)."""
    transport = connection.transport
    if transport is None or not transport.is_active():
        return RunOutcome(
            stdout=Received(cap=script.max_output_bytes),
            stderr=Received(cap=RUN_STDERR_KEPT),
            exit_status=None,
            ended_early="the SSH connection dropped",
        )
    outcome = _exec(transport, command or remote_command(script, sudo), script, deadline)
    outcome.host_key = host_key
    outcome.user = connection.user
    outcome.port = connection.port
    return outcome


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


def open_exec(
    transport: paramiko.Transport, command: str, where: str | None = None
) -> paramiko.Channel:
    """A session channel running ``command``; ``Unreachable`` (its message led by ``where``
    when given) when the server ends the connection or refuses the session first: paramiko
    raises EOFError or SSHException from inside the channel open."""
    try:
        channel = transport.open_session()
        channel.exec_command(command)
    except (paramiko.SSHException, EOFError, OSError) as error:
        cause = transport.get_exception() or error
        if isinstance(cause, EOFError):
            why = "the server closed the connection"
        elif isinstance(cause, paramiko.ChannelException):
            why = (
                f"sshd refused to open a session ({cause.text}: its MaxSessions, or a "
                "restriction on this login in its config or authorized_keys)"
            )
        else:
            why = _reason(cause)
        said = f"connected, but no command could start: {why}"
        raise Unreachable(f"{where}: {said}" if where else said) from error
    return channel


def _exec(
    transport: paramiko.Transport, command: str, script: Script, deadline: float
) -> RunOutcome:
    stdout, stderr = _streams(script)
    try:
        channel = open_exec(transport, command)
    except Unreachable as error:
        return RunOutcome(stdout=stdout, stderr=stderr, exit_status=None, ended_early=error.message)
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
