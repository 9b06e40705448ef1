"""Collect one host: compose the script, run it once, keep the raw bundle, judge it."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from forensics import __version__
from forensics.core.errors import (
    AuthRefused,
    CollectionError,
    DeadlineExceeded,
    Interrupted,
    UsageError,
)
from forensics.core.escaping import one_line
from forensics.core.models import (
    CollectOptions,
    CollectStatus,
    Manifest,
    SectionResult,
    SectionSpec,
    Target,
)
from forensics.core.probe import Captured
from forensics.core.redaction import redact
from forensics.judge.analysis import analyze
from forensics.judge.host_report import HostReport
from forensics.probes import by_name
from forensics.remote import bundle
from forensics.remote.host_script import Decoded, Script, compose, decode
from forensics.remote.transport import INTERRUPTED, RunOutcome, run

# How much of a line the host wrote is quoted in a one-line error.
HOST_TEXT_SHOWN = 200
# A section the client wrote says so where a host section names its shell.
CLIENT_COMMAND = "(written by the client: forensics arm)"

Runner = Callable[[Script, float], RunOutcome]
"""Runs the script until a ``time.monotonic()`` deadline: by default ``transport.run``
(a new connection, or /bin/sh locally); the flight recorder passes one that uses its open
connection."""


def collect(
    target: Target,
    options: CollectOptions,
    out: Path,
    gate: bundle.CommitGate | None = None,
    runner: Runner | None = None,
    client_sections: Mapping[str, bytes] | None = None,
) -> HostReport:
    """Collect ``target`` within ``options.timeout``; raise ``CollectionError`` when
    nothing could be collected. Whatever came back is written to a bundle under ``out``
    (unless ``gate`` was closed first: a sweep that stopped waiting), with
    ``client_sections`` (name -> bytes the client produced, e.g. the recorder's) beside the
    host's, hashed in the manifest like them."""
    specs = _sections(options)
    script = compose(specs, focus=options.focus, deadline_s=options.timeout)
    bundle.check_out(out, room=bundle.room_needed(specs, script))
    started = datetime.now(UTC)
    deadline = time.monotonic() + options.timeout
    outcome = runner(script, deadline) if runner else run(target, script, deadline)
    finished = datetime.now(UTC)
    decoded = decode(script, outcome.stream)
    status, reason = _status(decoded, outcome)
    manifest = Manifest(
        tool_version=__version__,
        target=target,
        user=outcome.user or target.user,
        port=outcome.port or target.port,
        host_key=outcome.host_key,
        started=started,
        finished=finished,
        status=status,
        status_reason=reason,
        options=options,
        nonce=script.nonce,
        script_sha256=script.sha256,
        script=script.text,
        sections=[decoded.outputs[spec.name].result for spec in script.sections]
        + [_client_result(name, data) for name, data in (client_sections or {}).items()],
        transport_exit_status=outcome.exit_status,
        run_stdout=outcome.stdout.record(),
        run_stderr=outcome.stderr.record(),
    )
    raw = {
        name: bundle.RawSection(stdout=output.stdout, stderr=output.stderr)
        for name, output in decoded.outputs.items()
        if output.result.finished
    }
    captures = {
        name: Captured(
            result=output.result,
            text=output.stdout.decode("utf-8", "replace"),
            stderr=output.stderr.decode("utf-8", "replace"),
        )
        for name, output in decoded.outputs.items()
    }
    from_host = len(raw)
    for result in manifest.sections[len(specs) :]:
        data = (client_sections or {})[result.name]
        raw[result.name] = bundle.RawSection(stdout=data, stderr=b"")
        captures[result.name] = Captured(result=result, text=data.decode("utf-8", "replace"))
    judged: list[HostReport] = []

    def report_at(path: Path) -> str:
        judged[:] = [analyze(manifest, captures, bundle=str(path))]
        return judged[0].model_dump_json(indent=2)

    path = bundle.write(out, manifest, raw, bytes(outcome.stderr.kept), report_at, gate)
    if outcome.ended_early == INTERRUPTED:
        raise Interrupted(
            f"{target.name}: {INTERRUPTED}; {from_host} of {len(specs)} sections had come back, "
            f"kept in {path}"
        )
    if not from_host:
        try:
            _raise_nothing_collected(target, outcome, decoded, path)
        except CollectionError as error:
            error.bundle = str(path)
            raise
    return judged[0]


def _client_result(name: str, data: bytes) -> SectionResult:
    return SectionResult(
        name=name,
        command=CLIENT_COMMAND,
        exit_status=0,
        duration_s=None,
        bytes=len(data),
        truncated=False,
        timed_out=False,
        finished=True,
        sha256=hashlib.sha256(data).hexdigest(),
    )


def room_needed(options: CollectOptions) -> int:
    """The most disk one bundle collected with ``options`` can take."""
    specs = _sections(options)
    return bundle.room_needed(specs, compose(specs, focus=options.focus))


def _sections(options: CollectOptions) -> list[SectionSpec]:
    try:
        probes = by_name(options.probes)
    except KeyError as error:
        raise UsageError(f"unknown probe {error.args[0]!r}") from error
    return [spec for probe in probes for spec in probe.sections(options)]


def _status(decoded: Decoded, outcome: RunOutcome) -> tuple[CollectStatus, str | None]:
    unfinished = [name for name, out in decoded.outputs.items() if not out.result.finished]
    if not unfinished and outcome.ended_early is None:
        return CollectStatus.ok, None
    why = outcome.ended_early or decoded.fatal or _stopped(decoded)
    if decoded.running:
        why += f" while section {decoded.running} was running"
    if unfinished:
        why += f"; not collected: {', '.join(unfinished)}"
    return CollectStatus.partial, why


def _stopped(decoded: Decoded, exit_status: int | None = None) -> str:
    if decoded.garbled:
        return "its output broke the framing the script writes: not our script, or forged"
    return "the script stopped early" if exit_status is None else f"exit status {exit_status}"


def _raise_nothing_collected(
    target: Target, outcome: RunOutcome, decoded: Decoded, path: Path
) -> None:
    if outcome.ended_early and "deadline" in outcome.ended_early:
        raise DeadlineExceeded(
            f"{target.name}: the deadline passed before any section finished "
            f"(raw output kept in {path}); raise --timeout"
        )
    said = [
        one_line(line, HOST_TEXT_SHOWN) for line in redact(outcome.stderr_text).strip().splitlines()
    ]
    refusal = next((line for line in said if "sudo" in line), None)
    if target.sudo and refusal is not None:
        who = outcome.user or target.user or "the login user"
        raise AuthRefused(
            f"{target.name}: sudo refused to run the collection as root ({refusal.strip()}); "
            f"{who} needs a NOPASSWD sudo rule for /bin/sh, or collect without sudo "
            f"(raw output kept in {path})"
        )
    fatal = one_line(decoded.fatal, HOST_TEXT_SHOWN) if decoded.fatal else None
    if outcome.ended_early and not fatal:
        raise CollectionError(
            f"{target.name}: {outcome.ended_early} before any section finished "
            f"(what came back is kept in {path})"
        )
    detail = fatal or (said[-1] if said else _stopped(decoded, outcome.exit_status))
    raise CollectionError(
        f"{target.name}: the collection script did not run ({detail}); "
        f"the host needs /bin/sh and base64 (raw output kept in {path})"
    )
