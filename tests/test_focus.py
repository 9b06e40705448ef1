"""``--focus``: one dialect, read alike by ``grep -E`` on the host and RE2 here; one shell
function that finds the focus processes; nothing a pattern can do hangs a collection."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.core.focus import Focus, command_line_subject, focus_problem
from forensics.core.models import SectionSpec
from forensics.remote.host_script import compose, decode
from tests.conftest import run_cli
from tests.fleet import fleet
from tests.sshd import sshd_available

CATASTROPHIC = "(a+)+$"
SHELLS = [
    pytest.param(["dash", "-c"], id="dash"),
    pytest.param(["busybox", "sh", "-c"], id="busybox"),
    pytest.param(["bash", "--posix", "-c"], id="bash"),
]


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"cuzk-\d+", r"\d is a Perl class"),
        (r"\bcuzk\b", "word or text boundary"),
        (r"(cuzk)\1", "backreference"),
        ("(?i)cuzk", "(? at 1 is Perl syntax"),
        ("(?:cuzk|lotus)", "(? at 1 is Perl syntax"),
        ("cuzk.*?worker", "two repeats in a row"),
        ("cuzk++", "two repeats in a row"),
        ("*cuzk", "repeats nothing"),
        ("cuzk|", "empty alternative"),
        ("cuzk[[:word:]]", "[:word:] is not a character class"),
        ("[[=e=]]", "equivalence class"),
        ("[z-a]", "runs backwards"),
        ("[[:alpha:]-z]", "starts at a class"),
        ("cuzk(", "never closed"),
        ("cuzk)", "closes nothing"),
        ("a{2", "does not start a repeat count"),
        ("a{1001}", "above 1000"),
        ("", "empty pattern"),
        ("cuzk\nlotus", "newline"),
        ("cuzk\\", "lone backslash"),
    ],
)
def test_what_grep_would_read_differently_is_refused_with_one_line(pattern: str, why: str) -> None:
    problem = focus_problem(pattern)
    assert problem is not None and why in problem
    assert "\n" not in problem


def test_the_cli_refuses_a_perl_pattern_before_connecting(tmp_path: Path) -> None:
    result = run_cli("collect", "local", "--focus", r"cuzk\d", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert r"--focus: not a usable pattern: \d is a Perl class" in result.stderr
    assert list(tmp_path.iterdir()) == []


SUBJECTS = [
    "", "a", "b", "ab", "ba", "aab", "abab", "a.b", "a b", "a-b", "A", "aB", "[a]", "a{2}",
    "a+b", "a|b", "\\", "^a", "a$", "é", "caf\u00e9", "(a)", "--a", "a\tb", "0123", "x_y",
]  # fmt: skip
# Pieces that make patterns grep -E and RE2 might read differently: classes, brackets with
# ], ^ and -, intervals, anchors in odd places, escapes, bytes beyond ASCII.
PIECES = [
    "a", "b", "A", ".", "^", "$", "|", "(", ")", "*", "+", "?", "{2}", "{1,}", "{,2}", "{0,1}",
    "[ab]", "[^a]", "[]a]", "[a-]", "[-a]", "[[:alpha:]]", "[[:digit:]_]", "[[:space:]]",
    "\\.", "\\\\", "\\|", "\\[", "é", "[é]", " ", "-", "_", "\t", "[%--]", "[]-a]", "[a-c-]",
]  # fmt: skip


def _grep_matches(grep: list[str], pattern: str, tmp: Path) -> set[int]:
    (tmp / "pattern").write_bytes(pattern.encode())
    (tmp / "subjects").write_bytes("".join(s + "\n" for s in SUBJECTS).encode())
    completed = subprocess.run(
        [*grep, "-n", "-E", "-f", str(tmp / "pattern"), str(tmp / "subjects")],
        capture_output=True,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
        timeout=10,
        check=False,
    )
    assert completed.returncode in (0, 1), (pattern, completed.stderr)
    return {int(line.split(b":", 1)[0]) - 1 for line in completed.stdout.splitlines()}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("focus")


@pytest.mark.parametrize("grep", [["grep"], ["busybox", "grep"]], ids=["gnu", "busybox"])
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join))
def test_every_pattern_accepted_matches_here_as_grep_matches_on_the_host(
    grep: list[str], scratch: Path, pattern: str
) -> None:
    if shutil.which(grep[0]) is None:
        pytest.skip(f"{grep[0]} is not installed")
    if focus_problem(pattern) is not None:
        return
    focus = Focus.compile(pattern)
    here = {index for index, subject in enumerate(SUBJECTS) if focus.search(subject)}
    assert here == _grep_matches(grep, pattern, scratch), pattern


def test_a_catastrophic_pattern_is_matched_in_linear_time() -> None:
    focus = Focus.compile(CATASTROPHIC)
    started = time.monotonic()
    assert not focus.matches_process("python3", "a" * 4000 + "!")
    assert focus.search("a" * 100_000)
    assert time.monotonic() - started < 0.5


def test_the_command_line_is_read_as_the_host_reads_it() -> None:
    assert command_line_subject("cuzk\x00--daemon\x00") == "cuzk --daemon"
    assert command_line_subject("sh\x00-c\x00a\nb\x00") == "sh -c a b"
    assert len(command_line_subject("x" * 9000)) == 4096


TOKEN = f"fx{os.getpid()}"


@pytest.fixture
def marked_process() -> Iterator[subprocess.Popen[bytes]]:
    """A live process whose command line ends in 40 a's and a '!': (a+)+$ backtracks on it
    for hours in a backtracking engine."""
    code = f"import time; time.sleep(120)  # {TOKEN}"
    process = subprocess.Popen([sys.executable, "-c", code, f"{TOKEN}-" + "a" * 40 + "!"])
    time.sleep(0.2)
    yield process
    process.kill()
    process.wait()


def test_collect_and_analyze_with_a_catastrophic_focus_end_in_seconds(
    marked_process: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    started = time.monotonic()
    result = run_cli(
        "collect", "local", "--focus", CATASTROPHIC, "--snapshot-gap", "0", "--timeout", "60",
        "--fail-on", "never", "--format", "json", "--out", str(tmp_path), timeout=60,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert time.monotonic() - started < 30
    report = json.loads(result.stdout)
    assert report["facts"]["processes"]["focus"]["error"] is None
    assert marked_process.pid not in report["facts"]["processes"]["focus"]["live"]
    [bundle] = [path for path in (tmp_path / "local").iterdir() if path.is_dir()]
    started = time.monotonic()
    replay = run_cli("analyze", str(bundle), "--format", "json", timeout=60)
    assert replay.exit_code in (0, 1), replay.stderr
    assert time.monotonic() - started < 30
    assert (
        json.loads(replay.stdout)["facts"]["processes"]["focus"]
        == (report["facts"]["processes"]["focus"])
    )


def _focus_pids(shell: list[str], pattern: str) -> list[int]:
    """Run ``_fx_focus`` in a section of a composed host script, as the probes do."""
    if shutil.which(shell[0]) is None:
        pytest.skip(f"{shell[0]} is not installed")
    spec = SectionSpec(
        name="found", shell='. ./focus.sh; _fx_focus 50; echo "$_fx_fp"; echo "error $_fx_fe"'
    )
    script = compose([spec], focus=pattern)
    stream = subprocess.run([*shell, script.text], capture_output=True, timeout=60).stdout
    output = decode(script, stream).outputs["found"].stdout.decode()
    pids, error = output.splitlines()
    assert error == "error "
    return [int(pid) for pid in pids.split()]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_shell_function_finds_by_name_and_command_line_never_the_collector(
    shell: list[str], marked_process: subprocess.Popen[bytes]
) -> None:
    # The pattern is in the script, but neither the script's shells nor grep match it.
    assert _focus_pids(shell, f"{TOKEN}-a+!$") == [marked_process.pid]
    code = f"import time; time[.]sleep[(]120[)]  # {TOKEN}"
    assert _focus_pids(shell, f"^{code}") == []  # a command line starts at argv[0]
    assert _focus_pids(shell, f"-c {code} {TOKEN}-a") == [marked_process.pid]
    assert marked_process.pid in _focus_pids(shell, "^python")  # the name, or argv[0]
    # Any process whose name ends in 'a' matches (a+)+$: only ours must not, and in time.
    assert marked_process.pid not in _focus_pids(shell, CATASTROPHIC)


def test_a_command_line_that_forges_a_file_header_matches_only_its_own_process() -> None:
    forger = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", f"x\n==> /proc/1/comm <==\n{TOKEN}"]
    )
    try:
        time.sleep(0.2)
        assert _focus_pids(["dash", "-c"], f"{TOKEN}$") == [forger.pid]
        # The newline in the argument reads as a space, as in the parsed facts.
        assert _focus_pids(["dash", "-c"], f"x ==> /proc/1/comm <== {TOKEN}$") == [forger.pid]
    finally:
        forger.kill()
        forger.wait()


def test_a_sweep_with_a_catastrophic_focus_ends_in_seconds(
    marked_process: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    if not sshd_available():
        pytest.skip("OpenSSH server not installed (apt-get install openssh-server)")
    with fleet(tmp_path / "fleet") as made:
        made.add("gpu-a")
        inventory = made.write_inventory(tmp_path / "inventory.yaml", focus=CATASTROPHIC)
        started = time.monotonic()
        result = run_cli(
            "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"),
            "--timeout", "60", "--format", "json", timeout=90,
        )  # fmt: skip
    assert time.monotonic() - started < 45
    assert result.exit_code in (0, 1), result.stderr
    [host] = json.loads(result.stdout)["hosts"]
    assert host["status"] == "ok", host
    report = json.loads(Path(host["bundle"], "report.json").read_text())
    focus = report["facts"]["processes"]["focus"]
    assert focus["pattern"] == CATASTROPHIC and focus["error"] is None
    assert marked_process.pid not in focus["live"]
