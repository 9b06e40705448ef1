"""A hostile host answers the collection with a crafted stream over real SSH. Whatever it
sends, ``collect`` ends by its deadline, with one inert line and exit 3, keeps at most its
caps on disk, and says in the manifest what was cut."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from forensics.remote.transport import RUN_STDERR_KEPT
from tests.hostile.crafted import (
    BIDI,
    OSC_0,
    OSC_52,
    SLACK_S,
    assert_one_inert_line,
    crafted_host,
    manifest,
    only_bundle,
    timed_cli,
)
from tests.sshd import SshServer

MakeSshd = Callable[..., SshServer]


def collect(host: SshServer, out: Path, timeout: str = "10") -> object:
    return timed_cli(
        "collect", *host.target_args(), "--out", str(out), "--timeout", timeout,
        "--probe", "system", "--format", "json",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "body"),
    [
        (
            "negative size",
            'printf \'\\n%s START system\\n\\n%s DATA system 0 1.0 1.5 -40 k\\nabc\' "$n" "$n";'
            " printf '\\n%s END system\\n' \"$n\"; sleep 1",
        ),
        (
            "huge size",
            "printf '\\n%s START system\\n\\n%s DATA system 0 1.0 1.5 99999999999999999 k\\nabc'"
            ' "$n" "$n"',
        ),
        ("non-numeric fields", "printf '\\n%s DATA system x 1e9 nan -K k\\n' \"$n\""),
    ],
)
def test_a_forged_frame_is_refused_promptly(
    make_sshd: MakeSshd, tmp_path: Path, name: str, body: str
) -> None:
    host = crafted_host(make_sshd, tmp_path, body)
    run = collect(host, tmp_path / "out")
    assert run.seconds < 10 + SLACK_S, name
    assert run.result.exit_code == 3, run.result.stderr
    line = assert_one_inert_line(run.result.stderr)
    assert "broke the framing" in line or "stopped early" in line, line
    sections = manifest(only_bundle(tmp_path / "out"))["sections"]
    assert [s["finished"] for s in sections] == [False]  # type: ignore[index]


def test_a_forged_fatal_frame_reaches_the_terminal_inert(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    body = f"printf '\\n%s FATAL {OSC_52}{OSC_0}{BIDI}gnp.exe\\n' \"$n\"; exit 70"
    run = collect(crafted_host(make_sshd, tmp_path, body), tmp_path / "out")
    assert run.result.exit_code == 3
    line = assert_one_inert_line(run.result.stderr)
    assert "\\x1b]52;c;aGFja2Vk\\x07" in line
    only_bundle(tmp_path / "out")


def test_escape_sequences_on_stderr_are_shown_inert(make_sshd: MakeSshd, tmp_path: Path) -> None:
    body = f"printf '{OSC_52}\\n{OSC_0}\\n\\302\\23331m{BIDI}login failed\\n' >&2; exit 1"
    run = collect(crafted_host(make_sshd, tmp_path, body), tmp_path / "out")
    assert run.result.exit_code == 3
    line = assert_one_inert_line(run.result.stderr)
    assert "did not run" in line and "login failed" in line and "\\x9b31m" in line
    raw = only_bundle(tmp_path / "out") / "raw" / "_run.stderr.txt"
    assert b"\x1b]52;" in raw.read_bytes()  # the evidence itself is kept verbatim


def test_endless_stdout_is_cut_at_the_cap_long_before_the_deadline(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    body = "while :; do printf '\\n%s START system\\n' \"$n\"; done & cat /dev/zero; wait"
    run = collect(crafted_host(make_sshd, tmp_path, body), tmp_path / "out", timeout="30")
    assert run.seconds < 30
    assert run.result.exit_code == 3
    line = assert_one_inert_line(run.result.stderr)
    assert "more than the" in line and "bytes the script can write" in line, line
    recorded = manifest(only_bundle(tmp_path / "out"))["run_stdout"]
    assert recorded["truncated"] and recorded["bytes_kept"] == recorded["cap"]  # type: ignore[index]


def test_endless_stderr_is_capped_and_the_deadline_holds(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    body = f"yes '{OSC_52} noise' >&2"
    run = collect(crafted_host(make_sshd, tmp_path, body), tmp_path / "out", timeout="5")
    assert run.seconds < 5 + SLACK_S
    assert run.result.exit_code == 3
    line = assert_one_inert_line(run.result.stderr)
    assert "deadline" in line
    bundle = only_bundle(tmp_path / "out")
    assert (bundle / "raw" / "_run.stderr.txt").stat().st_size == RUN_STDERR_KEPT
    recorded = manifest(bundle)["run_stderr"]
    assert recorded["truncated"] and recorded["bytes_received"] > RUN_STDERR_KEPT  # type: ignore[index]


def test_a_connection_dropped_mid_frame_keeps_what_finished(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    # The session's sshd process dies in the middle of a section's bytes.
    body = (
        "printf '\\n%s START system\\n\\n%s DATA system 0 1.0 1.5 100 k\\nonly ten b' "
        '"$n" "$n"; sleep 0.5; kill -9 $PPID; sleep 30'
    )
    run = collect(crafted_host(make_sshd, tmp_path, body), tmp_path / "out")
    assert run.seconds < 10 + SLACK_S
    assert run.result.exit_code == 3
    assert_one_inert_line(run.result.stderr)
    sections = manifest(only_bundle(tmp_path / "out"))["sections"]
    assert [s["finished"] for s in sections] == [False]  # type: ignore[index]
