"""The masking rules on a corpus of wrapper scripts, each judged place proved by running it.

``tests/samples/scripts/corpus/`` holds training launchers, benchmark loops, CI stages and
``spark-submit``/``torchrun``/``mpirun``/``deepspeed`` wrappers written for these tests;
``expected.toml`` records, per script, the places the analysis must flag (line, pattern),
the places that act on a status and must stay quiet, the never-called functions it must
note, and the runs that prove each verdict. A run puts stand-ins for the launchers first
on PATH (each prints its arguments and exits 0, or 42 when named in ``fail``; ``name:word``
fails only when an argument holds ``word``) and runs the script under each listed shell:
a flagged place must lose the 42 (the script exits 0, or says a status that is not 42), a
quiet place must let it through (a non-zero exit). POSIX scripts run under bash and dash;
scripts that need bash (pipefail, PIPESTATUS, arrays) run under bash only.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from forensics.shell.masking import MaskingAnalysis, find_masking

CORPUS = Path(__file__).parent / "samples" / "scripts" / "corpus"
EXPECTED: dict[str, dict[str, Any]] = tomllib.loads((CORPUS / "expected.toml").read_text())
FAILED = 42
STAND_INS = (
    "torchrun", "deepspeed", "mpirun", "spark-submit", "python", "python3", "accelerate",
    "aws", "gsutil", "nvidia-smi", "make", "cmake", "ctest", "pytest", "docker", "srun",
    "horovodrun", "all_reduce_perf", "nsys", "curl", "pip", "sleep", "hdfs", "kubectl",
    "ray", "nccl-check", "git-lfs", "dcgmi", "bazel", "cargo", "go", "npm", "helm",
)  # fmt: skip
STUB = """#!/bin/sh
name=${0##*/}
echo "[$name] $*"
for f in $STUB_FAIL; do
  case $f in
    "$name") exit 42 ;;
    "$name":*) case " $* " in *"${f#*:}"*) exit 42 ;; esac ;;
  esac
done
exit 0
"""


def analyse(name: str) -> MaskingAnalysis:
    script = CORPUS / f"{name}.sh"

    def beside(sourced: str) -> str | None:
        path = script.parent / sourced
        return path.read_text() if path.is_file() else None

    return find_masking(script.read_text(), read_source=beside)


def expected_places(name: str) -> set[tuple[str, int, str]]:
    """(file, line, pattern): a flagged entry is [line, pattern] in the script itself, or
    [line, pattern, file] in a file it sources."""
    places = set()
    for place in EXPECTED[name].get("flagged", []):
        line, pattern, *file = place
        places.add((file[0] if file else "", line, pattern))
    return places


def found_places(analysis: MaskingAnalysis) -> set[tuple[str, int, str]]:
    return {(issue.file or "", issue.line, issue.pattern) for issue in analysis.issues}


def test_the_corpus_is_large_and_every_script_has_its_expectations() -> None:
    scripts = sorted(path.stem for path in CORPUS.glob("*.sh"))
    assert len(scripts) >= 60
    assert scripts == sorted(EXPECTED)


def test_precision_and_recall_over_the_corpus_are_both_complete() -> None:
    true_positive = false_positive = false_negative = 0
    wrong: list[str] = []
    for name in sorted(EXPECTED):
        found = found_places(analyse(name))
        expected = expected_places(name)
        true_positive += len(found & expected)
        false_positive += len(found - expected)
        false_negative += len(expected - found)
        if found != expected:
            extra, missed = sorted(found - expected), sorted(expected - found)
            wrong.append(f"{name}: extra {extra}, missed {missed}")
    precision = true_positive / ((true_positive + false_positive) or 1)
    recall = true_positive / ((true_positive + false_negative) or 1)
    print(
        f"\ncorpus: {len(EXPECTED)} scripts, {true_positive + false_negative} expected places; "
        f"precision {precision:.1%} ({false_positive} false), recall {recall:.1%} "
        f"({false_negative} missed)"
    )
    assert wrong == []
    assert (precision, recall) == (1.0, 1.0)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_quiet_places_notes_dialect_and_sources_are_as_recorded(name: str) -> None:
    expected = EXPECTED[name]
    analysis = analyse(name)
    flagged_lines = {issue.line for issue in analysis.issues if issue.file is None}
    assert not flagged_lines & set(expected.get("clean", []))
    assert sorted(note.line for note in analysis.notes) == sorted(expected.get("notes", []))
    assert (analysis.dialect_note is not None) == expected.get("dialect_note", False)
    unread = sorted(source.name for source in analysis.sourced if not source.read)
    assert unread == sorted(expected.get("unread", []))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_judged_place_has_a_run_that_proves_it(name: str) -> None:
    expected = EXPECTED[name]
    proofs = expected.get("proofs", [])
    lost = {line for proof in proofs if proof["lost"] for line in proof["lines"]}
    kept = {line for proof in proofs if not proof["lost"] for line in proof["lines"]}
    assert {_proof_key(place) for place in expected.get("flagged", [])} <= lost
    assert set(expected.get("clean", [])) <= kept
    for proof in proofs:
        if proof["lost"]:
            assert proof["exit"] == 0 or ("says" in proof and str(FAILED) not in proof["says"]), (
                proof
            )
        else:
            assert proof["exit"] != 0, proof


def _proof_key(place: list[Any]) -> int | str:
    """How a proof names a place: its line, or ``FILE:LINE`` in a sourced file."""
    line, _, *file = place
    return f"{file[0]}:{line}" if file else int(line)


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("stand-ins")
    for name in STAND_INS:
        stub = directory / name
        stub.write_text(STUB)
        stub.chmod(0o755)
    return directory


RUNS = [
    (name, shell, index)
    for name, expected in sorted(EXPECTED.items())
    for shell in expected.get("shells", ["bash"])
    for index in range(len(expected.get("proofs", [])))
]


@pytest.mark.parametrize(("name", "shell", "index"), RUNS)
def test_each_verdict_holds_when_the_script_runs_with_a_failing_stand_in(
    name: str, shell: str, index: int, stand_ins: Path, tmp_path: Path
) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} not installed (apt-get install {shell})")
    proof = EXPECTED[name]["proofs"][index]
    completed = subprocess.run(
        [shell, str(CORPUS / f"{name}.sh"), *proof.get("args", [])],
        cwd=tmp_path,
        env={
            "PATH": f"{stand_ins}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "LC_ALL": "C",
            "STUB_FAIL": " ".join(proof["fail"]),
        },
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == proof["exit"], output
    if "says" in proof:
        assert proof["says"] in output, output
