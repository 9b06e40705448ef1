"""Hostile host data for the report tests: a scenario host whose identity is an attack,
and a HostReport whose findings and evidence carry every kind of markup a host can emit."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from forensics.core.facts import Facts
from forensics.core.models import EvidenceRef, Finding, SectionResult, Severity, Target
from forensics.judge.host_report import HostReport
from forensics.probes.system import SystemFacts
from tests.sshd import SshServer

SCRIPT = "<script>alert(1)</script>"
ANSI = "\x1b[31mRED\x1b[0m"
PIPES_AND_TICKS = "| a | b | `rm -rf /` ``` x"
INVALID_UTF8 = b"\xff\xfe\xc3("
PAD = 65536
"""The system probe reads each file up to 64 KiB; four such files exceed its 256 KiB cap."""


def leak(url_base: str, what: str) -> str:
    """Markup that fetches ``url_base/what`` if a renderer ever obeys it."""
    return (
        f'<img src="{url_base}/{what}.png" onerror="alert(1)"> '
        f"![{what}]({url_base}/{what}.md.png) [click](javascript:alert(1))"
    )


def _padded(first: bytes) -> bytes:
    return first + b"#" * (PAD - len(first))


def hostile_host(make_sshd: Callable[..., SshServer], root: Path, url_base: str) -> SshServer:
    """An sshd whose sessions see a hostile hostname, PID 1 and OS name, and /proc files
    big enough that the ``system`` section is cut at its byte cap (a real finding).

    The session runs in a private mount namespace with files bound over the real ones, so
    the tool reads them exactly as it would on a host that was built this way."""
    root.mkdir(parents=True, exist_ok=True)
    files = {
        "/proc/sys/kernel/hostname": f"{SCRIPT}{PIPES_AND_TICKS}{ANSI}\n".encode(),
        "/proc/1/comm": f"{SCRIPT}\n".encode(),
        "/proc/1/cmdline": b"\x00".join(
            [b"/init", f"--title={PIPES_AND_TICKS}".encode(), ANSI.encode(), INVALID_UTF8, b""]
        ),
        "/etc/os-release": _padded(
            f'PRETTY_NAME="{leak(url_base, "os")} # {PIPES_AND_TICKS}"\n'.encode()
        ),
        "/sys/devices/system/cpu/online": _padded(b"0-1\n"),
        "/proc/1/sched": _padded(b"init (1, #threads: 1)\n"),
        "/proc/1/cgroup": _padded(b"0::/\n"),
    }
    binds = []
    for index, (target, content) in enumerate(files.items()):
        source = root / f"file{index}"
        source.write_bytes(content)
        binds.append(f"mount --bind {source} {target}")
    wrapper = root / "enter.sh"
    wrapper.write_text(
        "#!/bin/sh\n"
        "# Scenario host: a private mount namespace with the hostile files bound in place.\n"
        f"exec unshare -m sh -c '{' && '.join(binds)} && "
        'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\'\n'
    )
    wrapper.chmod(0o755)
    return make_sshd(force_command=str(wrapper))


def hostile_report(url_base: str) -> HostReport:
    """A report of two findings whose every host-derived string is an attack."""
    now = datetime(2025, 11, 29, 20, 15, tzinfo=UTC)
    excerpt = "\n".join(
        [
            f"[ 12.5] {SCRIPT} {ANSI}",
            f"log | with | pipes {PIPES_AND_TICKS}",
            "</details><details open>",
            "```",
            "bad bytes: " + INVALID_UTF8.decode("utf-8", "replace"),
            "# not a heading",
            leak(url_base, "evidence"),
        ]
        + [f"line {n}" for n in range(20)]
    )
    findings = [
        Finding(
            id="process.zombie",
            severity=Severity.critical,
            title=f"{SCRIPT} (pid 4242) is a zombie | {ANSI}",
            explanation=f"Its name is {SCRIPT}.\n\n{leak(url_base, 'explanation')}",
            next_steps=[f"cat /proc/4242/status | grep -i {PIPES_AND_TICKS}", "- 1. not a list"],
            subject={"pid": 4242, "name": SCRIPT, "note": PIPES_AND_TICKS},
            evidence=[
                EvidenceRef(section="processes", first_line=3, last_line=29, excerpt=excerpt)
            ],
        ),
        Finding(
            id="log.errors",
            severity=Severity.warning,
            title=f"Errors in {PIPES_AND_TICKS}",
            explanation=leak(url_base, "log"),
            subject={"path": f"/var/log/{SCRIPT}.log"},
            evidence=[EvidenceRef(section="logs", first_line=1, last_line=1, excerpt=ANSI)],
        ),
    ]
    section = SectionResult(
        name="system", command="true", exit_status=0, duration_s=0.1, bytes=10,
        truncated=False, timed_out=False, finished=True,
    )  # fmt: skip
    return HostReport(
        tool_version="0.1.0",
        target=Target(name=f"{SCRIPT}|gpu"),
        status="ok",
        started=now,
        finished=now + timedelta(seconds=2),
        bundle=f"/tmp/{SCRIPT}`x`",
        facts=Facts(
            system=SystemFacts(
                hostname=f"{SCRIPT}{ANSI}",
                os_name=leak(url_base, "system"),
                pid1_name=f"{PIPES_AND_TICKS}\n| injected | row |",
                boot_time=now - timedelta(days=37),
                container_evidence=[SCRIPT],
            )
        ),
        findings=findings,
        sections=[section],
    )
