"""The composed script under the shells it must run in, and the framing read back."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.core.models import SectionSpec
from forensics.remote.host_script import compose, decode
from tests.scenario import write_executable

SHELLS = [
    pytest.param(["dash", "-c"], id="dash"),
    pytest.param(["busybox", "sh", "-c"], id="busybox"),
    pytest.param(["bash", "--posix", "-c"], id="bash"),
]

SECTIONS = [
    SectionSpec(name="says_hello", shell="echo hello; echo oops >&2; exit 3"),
    SectionSpec(name="hangs", shell="sleep 30", timeout_s=1),
    SectionSpec(name="floods", shell="head -c 5000 /dev/zero", max_bytes=1000),
    SectionSpec(name="binary", shell="printf '\\377\\000\\033[31m'"),
]


def run(shell: list[str], text: str, env: dict[str, str] | None = None) -> bytes:
    if shutil.which(shell[0]) is None:
        pytest.skip(f"{shell[0]} is not installed")
    return subprocess.run([*shell, text], capture_output=True, timeout=60, env=env).stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_each_section_reports_status_bytes_and_limits(shell: list[str]) -> None:
    script = compose(SECTIONS)
    outputs = decode(script, run(shell, script.text)).outputs
    hello = outputs["says_hello"]
    assert (hello.stdout, hello.stderr, hello.result.exit_status) == (b"hello\n", b"oops\n", 3)
    assert outputs["hangs"].result.timed_out and outputs["hangs"].result.duration_s
    assert outputs["hangs"].result.duration_s < 5
    floods = outputs["floods"].result
    assert floods.truncated and floods.bytes == 1000 and len(outputs["floods"].stdout) == 1000
    assert outputs["binary"].stdout == b"\xff\x00\x1b[31m"
    assert all(o.result.finished for o in outputs.values())


@pytest.mark.parametrize("shell", SHELLS)
def test_sizes_are_counted_without_a_process(shell: list[str], tmp_path: Path) -> None:
    """The size of a section's output comes from the kernel's offset of the shell's fd 3
    (/proc/$$/fdinfo/3), not from wc: a wc that lies changes nothing."""
    write_executable(tmp_path / "wc", "#!/bin/sh\necho 999\n")
    script = compose(SECTIONS)
    stream = run(shell, script.text, env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    outputs = decode(script, stream).outputs
    assert outputs["says_hello"].stdout == b"hello\n"
    assert outputs["says_hello"].result.bytes == 6 and not outputs["says_hello"].result.truncated
    assert outputs["floods"].result.truncated and len(outputs["floods"].stdout) == 1000
    assert outputs["binary"].stdout == b"\xff\x00\x1b[31m"


def test_without_a_timeout_command_a_watchdog_still_stops_a_hung_section(tmp_path: Path) -> None:
    write_executable(tmp_path / "timeout", "#!/bin/sh\nexit 127\n")
    script = compose(SECTIONS)
    stream = run(["dash", "-c"], script.text, env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    outputs = decode(script, stream).outputs
    assert outputs["hangs"].result.timed_out
    assert outputs["hangs"].result.timeout_enforced is False
    assert outputs["says_hello"].stdout == b"hello\n"


def test_the_script_leaves_no_temp_dir_behind(tmp_path: Path) -> None:
    script = compose(SECTIONS[:1])
    run(["dash", "-c"], script.text, env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)})
    assert list(tmp_path.iterdir()) == []


def test_a_stream_cut_mid_section_keeps_the_sections_before_it() -> None:
    script = compose(SECTIONS)
    stream = run(["dash", "-c"], script.text)
    cut = stream[: stream.index(b"START floods") + 20]
    decoded = decode(script, cut)
    assert decoded.outputs["says_hello"].result.finished
    assert not decoded.outputs["floods"].result.finished
    assert decoded.running == "floods"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_decoding_arbitrary_bytes_never_raises(noise: bytes) -> None:
    script = compose(SECTIONS, nonce="0" * 32)
    framed = b"\n" + b"0" * 32 + b" DATA says_hello 0 1.0 1.5 5 k\n" + noise
    for stream in (noise, framed, framed[: len(framed) // 2]):
        decoded = decode(script, stream)
        assert set(decoded.outputs) == {s.name for s in SECTIONS}


IN_SHELL = [
    SectionSpec(
        name="reads", shell="echo in; IFS=:; set -f; echo warn >&2; return 4", in_shell=True
    ),
    SectionSpec(name="says_hello", shell="echo hello; exit 3"),
    SectionSpec(name="big", shell="printf 'x%.0s' 1 2 3 4 5", in_shell=True, max_bytes=2),
    SectionSpec(name="after", shell="printf '%s|' \"$IFS\" /*", in_shell=True),
]


@pytest.mark.parametrize("shell", SHELLS)
def test_in_shell_sections_are_framed_like_the_others(shell: list[str]) -> None:
    """An in-shell section runs in the script's shell: its status, stdout and stderr come
    back as any section's, its cap holds, and IFS and globbing are restored after it."""
    script = compose(IN_SHELL)
    decoded = decode(script, run(shell, script.text))
    outputs = decoded.outputs
    reads = outputs["reads"]
    assert (reads.stdout, reads.stderr, reads.result.exit_status) == (b"in\n", b"warn\n", 4)
    assert outputs["says_hello"].stdout == b"hello\n"
    assert outputs["big"].result.truncated and outputs["big"].stdout == b"xx"
    assert outputs["after"].stdout.startswith(b" \t\n|/bin|")
    assert decoded.running is None and not decoded.garbled


@pytest.mark.parametrize("shell", SHELLS)
def test_the_script_deadline_stops_a_hung_in_shell_section(
    shell: list[str], tmp_path: Path
) -> None:
    """An in-shell section has no watchdog of its own: the script's one deadline ends the
    script, the sections that finished before it still come back, and the temp dir goes."""
    sections = [
        SectionSpec(name="quick", shell="echo quick", in_shell=True),
        SectionSpec(name="hangs", shell="mkfifo f; read -r x <f", in_shell=True),
        SectionSpec(name="never", shell="echo never"),
    ]
    script = compose(sections, deadline_s=2)
    started = time.monotonic()
    stream = run(shell, script.text, env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)})
    assert time.monotonic() - started < 6
    decoded = decode(script, stream)
    assert decoded.outputs["quick"].stdout == b"quick\n"
    assert not decoded.outputs["hangs"].result.finished
    assert not decoded.outputs["never"].result.finished
    assert decoded.running == "hangs"
    assert list(tmp_path.iterdir()) == []


def test_the_script_deadline_stops_a_section_under_its_own_longer_timeout(
    tmp_path: Path,
) -> None:
    sections = [
        SectionSpec(name="quick", shell="echo quick", in_shell=True),
        SectionSpec(name="hangs", shell="sleep 30", timeout_s=20),
    ]
    script = compose(sections, deadline_s=2)
    started = time.monotonic()
    stream = run(
        ["dash", "-c"], script.text, env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    )
    assert time.monotonic() - started < 6
    decoded = decode(script, stream)
    assert decoded.outputs["quick"].stdout == b"quick\n"
    assert decoded.running == "hangs"
    assert list(tmp_path.iterdir()) == []


def test_in_shell_frames_go_out_before_a_section_that_may_hang(tmp_path: Path) -> None:
    """An in-shell section is framed as soon as it ends: a run cut while a later section
    hangs (the client's deadline, a dropped session) still brings it back."""
    sections = [
        SectionSpec(name="quick", shell="echo quick", in_shell=True),
        SectionSpec(name="hangs", shell="sleep 30", timeout_s=20),
    ]
    script = compose(sections)
    process = subprocess.Popen(
        ["dash", "-c", script.text],
        stdout=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)},
        start_new_session=True,
    )
    assert process.stdout is not None
    stream = b""
    deadline = time.monotonic() + 10
    while b"START hangs" not in stream and time.monotonic() < deadline:
        stream += os.read(process.stdout.fileno(), 65536)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    process.stdout.close()
    decoded = decode(script, stream)
    assert decoded.outputs["quick"].stdout == b"quick\n"
    assert decoded.running == "hangs"


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("cap", [1, 4, 7, 100])
def test_fx_dump_prints_what_head_prints(shell: list[str], cap: int, tmp_path: Path) -> None:
    """In-shell sections read files with _fx_dump instead of head -v -c: the same bytes for
    lines cut by the cap, a last line without newline, empty and missing files, backslashes
    and blanks."""
    files = {"a": b"one\n  two \\t\nno newline", "b": b"", "c": b"x\n\n\n", "d": b"\\\\\n"}
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    paths = [str(tmp_path / name) for name in ("a", "b", "missing", "c", "d")]
    spec = SectionSpec(name="dump", shell=f"_fx_dump {cap} " + " ".join(paths), in_shell=True)
    script = compose([spec])
    dumped = decode(script, run(shell, script.text)).outputs["dump"].stdout
    head = subprocess.run(["head", "-v", "-c", str(cap), *paths], capture_output=True).stdout
    assert dumped == head
