"""The masking rules on real wrapper scripts (tests/samples/scripts), correct idioms, odd
encodings, and arbitrary text."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.shell.masking import find_masking

SAMPLES = Path(__file__).parent / "samples" / "scripts"


def found(text: str, **kwargs: object) -> list[tuple[int, str]]:
    analysis = find_masking(text, **kwargs)  # type: ignore[arg-type]
    return [(issue.line, issue.pattern) for issue in analysis.issues]


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        (
            "benchmark_masked.sh",
            [
                (8, "negated_status_read"),
                (9, "negated_status_read"),
                (11, "retry_on_masked_status"),
            ],
        ),
        (
            "benchmark_no_pipefail.sh",
            [
                (5, "pipeline_without_pipefail"),
                (6, "negated_status_read"),
                (8, "pipeline_without_pipefail"),
            ],
        ),
        (
            "late_reads.sh",
            [
                (5, "status_read_late"),
                (11, "status_read_late"),
                (12, "status_discarded"),
                (13, "pipestatus_read_late"),
            ],
        ),
        ("or_true.sh", [(3, "status_discarded"), (6, "status_discarded")]),
        ("posix_masked.sh", [(4, "pipeline_without_pipefail"), (5, "negated_status_read")]),
        ("pipestatus_correct.sh", []),
        ("else_rc_correct.sh", []),
        ("heredoc_and_quotes.sh", []),
    ],
)
def test_sample_wrappers_are_judged_line_by_line(
    sample: str, expected: list[tuple[int, str]]
) -> None:
    assert found((SAMPLES / sample).read_text()) == expected


def test_the_story_wrapper_names_the_pattern_and_shows_the_pipestatus_fix() -> None:
    analysis = find_masking((SAMPLES / "benchmark_masked.sh").read_text())
    first, late, retry = analysis.issues
    assert "`!` inverts the status of `/opt/cuzk/cuzk-daemon --gpus all 2>&1" in first.explanation
    assert "never the exit status of `/opt/cuzk/cuzk-daemon`" in first.explanation
    assert first.corrected.startswith("rc=${PIPESTATUS[0]}; echo ")
    assert late.masked_variable == "rc"
    assert retry.related_lines == [6, 9]
    assert "never retries" in retry.explanation
    assert (analysis.dialect, analysis.errexit, analysis.pipefail) == ("bash", True, True)


def test_the_corrected_wrapper_really_reports_the_childs_status(tmp_path: Path) -> None:
    """The fix the rule proposes, run by bash: the real status 42 comes through."""
    child = tmp_path / "child.sh"
    child.write_text("#!/bin/sh\necho working\nexit 42\n")
    child.chmod(0o755)
    wrapper = f'set -euo pipefail\nif ! {child} | tee {tmp_path}/log; then\n  echo "exit $?"\nfi\n'
    fix = find_masking(wrapper).issues[0].corrected
    fixed = wrapper.replace('  echo "exit $?"', f"  {fix}")
    masked = subprocess.run(["bash", "-c", wrapper], capture_output=True, text=True, check=True)
    repaired = subprocess.run(["bash", "-c", fixed], capture_output=True, text=True, check=True)
    assert masked.stdout.splitlines()[-1] == "exit 0"
    assert repaired.stdout.splitlines()[-1] == "exit 42"
    assert found(fixed) == []


@pytest.mark.parametrize(
    "correct",
    [
        'set -o pipefail\nif ./d | tee log; then :; else rc=$?; echo "$rc"; fi\n',
        'set +e\n./d | tee log\nps=("${PIPESTATUS[@]}")\nset -e\n',
        "./d | tee log\nrc=${PIPESTATUS[0]}\n",
        'rc=0\n./d || rc=$?\necho "$rc"\n',
        './d || echo "daemon failed: $?"\n',
        './d\nrc=$?\nlog "rc=$rc"\n',
        'until ./d; do echo "exit $?, retrying"; sleep 1; done\n',
        'set -o pipefail\nif ! ./d | tee log; then rc=${PIPESTATUS[0]}; echo "$rc"; fi\n',
        "rm -f lock || true\n",
        './d\nrm -rf tmp || echo "rm failed: $?"\n',
        "case $? in 0) ;; esac\n",
    ],
)
def test_correct_idioms_raise_nothing(correct: str) -> None:
    assert found("#!/bin/bash\n" + correct) == []


def test_pipefail_given_on_the_interpreters_command_line_counts() -> None:
    text = "./d | tee log\nrc=$?\n"
    assert found(text, interpreter="bash") == [(1, "pipeline_without_pipefail")]
    assert find_masking(text, interpreter="bash").issues[0].related_lines == [2]
    assert found(text, interpreter="bash", interpreter_options=["-o", "pipefail"]) == []
    assert found("#!/bin/bash -e\n./d | tee log\n") == [(2, "pipeline_without_pipefail")]


def test_or_true_around_the_supervised_daemon_is_flagged_by_name() -> None:
    text = "set -e\n./cuzk --port 1 || true\nrm -f x || true\n"
    assert found(text) == []
    assert found(text, supervised=["cuzk"]) == [(2, "status_discarded")]
    assert found(text, focus="cu+zk") == [(2, "status_discarded")]
    assert found(text, focus="(unbalanced") == []


def test_dash_scripts_get_a_posix_fix_without_pipestatus() -> None:
    analysis = find_masking((SAMPLES / "posix_masked.sh").read_text(), interpreter="dash")
    assert analysis.dialect == "dash"
    assert all("PIPESTATUS" not in issue.corrected for issue in analysis.issues)
    assert "dash has no pipefail" in analysis.issues[0].corrected


def test_crlf_and_latin1_scripts_keep_their_line_numbers() -> None:
    original = (SAMPLES / "benchmark_masked.sh").read_text()
    crlf = original.replace("\n", "\r\n")
    latin1 = original.replace("# benchmark.sh", "# caf\xe9 benchmark.sh").encode("latin-1")
    decoded = latin1.decode("utf-8", "replace")
    assert "\ufffd" in decoded
    assert found(crlf) == found(original) == found(decoded)


def test_a_very_long_line_does_not_shift_or_slow_the_rules() -> None:
    original = (SAMPLES / "benchmark_masked.sh").read_text()
    long_line = "# " + "x" * 500_000 + "\n"
    text = original.replace("set -euo", long_line + "set -euo", 1)
    shifted = [(line + 1, pattern) for line, pattern in found(original)]
    assert found(text) == shifted
    assert len(find_masking(text).issues[0].excerpt) <= 200


def test_deep_nesting_is_read_flat_instead_of_exhausting_the_stack() -> None:
    assert found("{ " * 5000 + "./d | tee log; rc=$?" + " }" * 5000) is not None
    assert found("$(" * 5000) == []
    nested = "set -o pipefail\n" + "if ! a | tee l; then\n" * 3000 + "echo $?\n"
    assert all(line <= 3002 for line, _ in found(nested))


SHELL_PIECES = st.sampled_from(
    ["if", "then", "else", "elif", "fi", "while", "until", "do", "done", "for", "in", "case",
     "esac", ";;", "{", "}", "(", ")", "((", "))", "!", "|", "||", "&&", "&", ";", "\n",
     "\r\n", "$?", "${?}", "rc=$?", "${PIPESTATUS[0]}", "set -e", "set -o pipefail", "tee",
     "true", ":", "echo", "'", '"', "`", "$(", "<<EOF", "EOF", "<<-", "#", "\\", "2>&1",
     "f()", "function", "[[", "]]", "$((", "local", "x=(", "break", " "]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(SHELL_PIECES, max_size=80).map(" ".join))
def test_shell_like_text_never_raises(text: str) -> None:
    analysis = find_masking(text)
    lines = text.count("\n") + 1
    assert all(1 <= issue.line <= lines for issue in analysis.issues)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400), st.sampled_from([None, "bash", "dash", "zsh", "weird"]))
def test_arbitrary_text_never_raises(text: str, interpreter: str | None) -> None:
    find_masking(text, interpreter=interpreter, focus=text[:5] or None, supervised=[text[:3]])


RECORD_LINES = st.sampled_from(
    ["scripts 1 262144 6", "zombie 12 10 bash", "zombie x y", "zombies 3", "focus 12",
     "process 10 1 zombie_parent focus", "process 11 x", "comm 0", "comm 2", "cmdline 0",
     "bash\x00-e\x00x.sh\x00", "script_index 2", "script_index x", "arg 0", "x.sh", "cwd 0",
     "path 0", "/x.sh (deleted)", "via fd255", "size 12", "size x", "content 1", "content 99",
     "echo $?", "same", "error missing", "error cap", "requested", "skipped 4", "gone 3",
     "no_script 0", "stdin", "focus_error 0", "", "if ! a | tee l; then"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(RECORD_LINES, st.text(max_size=30)), max_size=60))
def test_the_scripts_parser_never_raises(lines: list[str]) -> None:
    from forensics.core.models import CollectOptions, SectionResult
    from forensics.core.probe import Captured
    from forensics.probes.scripts import parse

    text = "\n".join(["scripts 1 262144 6", *lines])
    result = SectionResult(
        name="scripts", command="", exit_status=0, duration_s=0.1, bytes=len(text),
        truncated=False, timed_out=False, finished=True,
    )  # fmt: skip
    facts = parse({"scripts": Captured(result=result, text=text)}, CollectOptions(focus="a("))
    for script in facts.scripts:
        assert script.content is not None or script.unavailable is not None


# Realistic pieces of wrapper scripts; unbalanced on purpose, as real edits leave them.
WRAPPER_LINES = (
    "set -e", "set +e", "set -o pipefail", "set +o pipefail", "set -euo pipefail",
    "torchrun --nproc_per_node=8 train.py 2>&1 | tee -a log", "rc=$?", 'echo "exit $?"',
    "if ! python bench.py | tee b.log; then", "then", "fi", "else", "  echo failed; exit $?",
    "for bs in 8 16 32; do", "done", "while true; do", "until [ $rc -eq 0 ]; do",
    "case $1 in", "  run) f{n} ;;", "esac", "f{n}() {", "f{n}() (", ")", "}", "f{n}",
    "f{n} || exit 1", "if f{n}; then :; fi", "( set -o pipefail; g | tee y )",
    "{ make; } 2>&1 | tee build.log", "source ./lib{n}.sh", "rc=${PIPESTATUS[0]}",
    "cmd && rc=0 || rc=$?", "[ $rc -eq 0 ] && break", "if [ $? -ne 0 ]; then",
    "trap f{n} EXIT", '"stage_$stage"', "mpirun -np 4 x | tail -n 3", "daemon || true",
)  # fmt: skip


@settings(max_examples=8, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_a_generated_5000_line_script_is_judged_within_a_second(seed: int) -> None:
    random = Random(seed)
    lines = [random.choice(WRAPPER_LINES).replace("{n}", str(random.randrange(60)))
             for _ in range(5000)]  # fmt: skip
    text = "#!/bin/bash\n" + "\n".join(lines)
    started = time.process_time()
    analysis = find_masking(text, read_source=lambda name: "f1() { x | tee y; }\n")
    assert time.process_time() - started < 1.0
    assert all(1 <= issue.line <= 5001 for issue in analysis.issues if issue.file is None)


def test_a_function_is_judged_with_the_options_of_each_caller() -> None:
    text = (
        "#!/bin/bash\nset -e\nrun() { torchrun x.py | tee log; }\n"
        "quiet() { :; }\nset -o pipefail\nrun\n# quiet\n"
    )
    analysis = find_masking(text)
    assert analysis.issues == []
    assert [note.line for note in analysis.notes] == [4]
    early = find_masking(text.replace("set -o pipefail\nrun\n", "run\nset -o pipefail\nrun\n"))
    assert [(issue.line, issue.pattern) for issue in early.issues] == [
        (3, "pipeline_without_pipefail")
    ]
    assert "through the call of `run` on line 5" in early.issues[0].explanation


def test_a_computed_command_name_calls_the_functions_it_can_name() -> None:
    text = (
        "#!/bin/bash\nset -e\nstage_build() { make | tee b; }\nstage_test() { :; }\n"
        'other() { x | tee y; }\nfor s in build test; do "stage_$s"; done\n'
    )
    analysis = find_masking(text)
    assert [(issue.line, issue.pattern) for issue in analysis.issues] == [
        (3, "pipeline_without_pipefail")
    ]
    assert [note.line for note in analysis.notes] == [5]


def test_sourced_files_are_followed_or_named() -> None:
    library = {"lib/run.sh": "set -o pipefail\nlaunch() { torchrun x | tee l; }\n"}
    text = (
        '#!/bin/bash\nset -e\n. "$(dirname "$0")/lib/run.sh"\nsource ./site.sh\n'
        'source "$CONF"\n. /etc/profile\nlaunch\n'
    )
    analysis = find_masking(text, read_source=library.get)
    assert analysis.issues == []
    assert [(s.name, s.read, s.problem) for s in analysis.sourced] == [
        ("lib/run.sh", True, None),
        ("site.sh", False, "could not be read beside the script"),
        ('"$CONF"', False, "its path is only known when the script runs"),
        ("/etc/profile", False, "not read: an absolute path, not beside the script"),
    ]
    unread = find_masking(text)
    assert {s.problem for s in unread.sourced} >= {"not read: only the script itself was available"}
