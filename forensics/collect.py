"""Collect one host: compose the script, run it once, keep the raw bundle, judge it."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from forensics import __version__
from forensics.core.errors import AuthRefused, CollectionError, DeadlineExceeded, UsageError
from forensics.core.models import CollectOptions, CollectStatus, Manifest, Target
from forensics.core.probe import Captured
from forensics.judge.analysis import analyze
from forensics.judge.host_report import HostReport
from forensics.probes import by_name
from forensics.remote import bundle
from forensics.remote.host_script import Decoded, compose, decode
from forensics.remote.transport import RunOutcome, run


def collect(target: Target, options: CollectOptions, out: Path) -> HostReport:
    """Collect ``target`` within ``options.timeout``; raise ``CollectionError`` when
    nothing could be collected. Whatever came back is written to a bundle under ``out``."""
    try:
        probes = by_name(options.probes)
    except KeyError as error:
        raise UsageError(f"unknown probe {error.args[0]!r}") from error
    specs = [spec for probe in probes for spec in probe.sections(options)]
    script = compose(specs, focus=options.focus)
    started = datetime.now(UTC)
    outcome = run(target, script, time.monotonic() + options.timeout)
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
        sections=[decoded.outputs[spec.name].result for spec in specs],
        transport_exit_status=outcome.exit_status,
    )
    raw = {
        name: bundle.RawSection(stdout=output.stdout, stderr=output.stderr)
        for name, output in decoded.outputs.items()
        if output.result.finished
    }
    path = bundle.write(out, manifest, raw, outcome.stderr)
    if not raw:
        _raise_nothing_collected(target, outcome, decoded, path)
    captures = {
        name: Captured(
            result=output.result,
            text=output.stdout.decode("utf-8", "replace"),
            stderr=output.stderr.decode("utf-8", "replace"),
        )
        for name, output in decoded.outputs.items()
    }
    report = analyze(manifest, captures, bundle=str(path))
    bundle.write_report(path, report.model_dump_json(indent=2))
    return report


def _status(decoded: Decoded, outcome: RunOutcome) -> tuple[CollectStatus, str | None]:
    unfinished = [name for name, out in decoded.outputs.items() if not out.result.finished]
    if not unfinished and outcome.ended_early is None:
        return CollectStatus.ok, None
    why = outcome.ended_early or decoded.fatal or "the script stopped early"
    if decoded.running:
        why += f" while section {decoded.running} was running"
    if unfinished:
        why += f"; not collected: {', '.join(unfinished)}"
    return CollectStatus.partial, why


def _raise_nothing_collected(
    target: Target, outcome: RunOutcome, decoded: Decoded, path: Path
) -> None:
    if outcome.ended_early and "deadline" in outcome.ended_early:
        raise DeadlineExceeded(
            f"{target.name}: the deadline passed before any section finished "
            f"(raw output kept in {path}); raise --timeout"
        )
    said = outcome.stderr.decode("utf-8", "replace").strip().splitlines()
    refusal = next((line for line in said if "sudo" in line), None)
    if target.sudo and refusal is not None:
        who = outcome.user or target.user or "the login user"
        raise AuthRefused(
            f"{target.name}: sudo refused to run the collection as root ({refusal.strip()}); "
            f"{who} needs a NOPASSWD sudo rule for /bin/sh, or collect without sudo "
            f"(raw output kept in {path})"
        )
    detail = decoded.fatal or (said[-1] if said else f"exit status {outcome.exit_status}")
    raise CollectionError(
        f"{target.name}: the collection script did not run ({detail}); "
        f"the host needs /bin/sh and base64 (raw output kept in {path})"
    )
