"""Every finding id the code can raise is catalogued once, and every catalogue entry is
raised somewhere; docs/FINDINGS.md is the catalogue printed; ``forensics explain``."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from forensics.core.models import Severity
from forensics.judge.catalogue import CATALOGUE, markdown
from tests.conftest import run_cli
from tests.source_tree import modules

FINDINGS_MD = Path(__file__).parent.parent / "docs" / "FINDINGS.md"


@dataclass(frozen=True)
class Raise:
    module: str
    line: int
    ids: tuple[str, ...]
    severities: tuple[str, ...]


def _constants(node: ast.expr) -> tuple[str, ...]:
    return tuple(
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    )


def _severity_names(node: ast.expr) -> tuple[str, ...]:
    return tuple(
        n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == "Severity"
    )


def _raises() -> list[Raise]:
    found = []
    for module in modules():
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name != "Finding":
                continue
            keywords = {k.arg: k.value for k in node.keywords}
            severity = keywords.get("severity")
            found.append(
                Raise(
                    module=module.name,
                    line=node.lineno,
                    ids=_constants(keywords["id"]),
                    severities=_severity_names(severity) if severity is not None else (),
                )
            )
    return found


def test_the_code_raises_findings_only_through_literal_catalogued_ids() -> None:
    raises = _raises()
    assert len(raises) > 20, "the scan found no Finding(...) calls: is it reading the tree?"
    for place in raises:
        where = f"{place.module}:{place.line}"
        assert place.ids, f"{where}: Finding(id=...) must be a literal id, to be catalogued"
        for finding_id in place.ids:
            assert finding_id in CATALOGUE, f"{where}: {finding_id} is not in the catalogue"
            entry = CATALOGUE[finding_id]
            assert entry.raised_by == place.module, (
                f"{where}: {finding_id} is catalogued as raised by {entry.raised_by}"
            )
            allowed = {s.name for s in entry.severities}
            for severity in place.severities:
                assert severity in allowed, f"{where}: {finding_id} is not {severity}"


def test_every_catalogued_id_is_raised_somewhere() -> None:
    raised = {finding_id for place in _raises() for finding_id in place.ids}
    assert sorted(set(CATALOGUE) - raised) == []


def test_every_entry_says_what_a_tired_engineer_needs() -> None:
    for entry in CATALOGUE.values():
        assert entry.severities and entry.meaning and entry.question.endswith("?")
        assert entry.next_steps, entry.id
        assert list(entry.severities) == sorted(entry.severities, key=lambda s: s.rank)
        assert all(isinstance(s, Severity) for s in entry.severities)


def test_findings_md_is_generated_from_the_catalogue() -> None:
    assert FINDINGS_MD.read_text() == markdown(), (
        "docs/FINDINGS.md is stale: python3 -m forensics.judge.catalogue > docs/FINDINGS.md"
    )


def test_explain_prints_one_entry() -> None:
    result = run_cli("explain", "init.not_reaping")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("init.not_reaping  (warning)\n")
    assert "question:  Does PID 1 reap orphans?" in result.stdout
    assert "raised by: forensics.probes.processes_rules" in result.stdout


def test_explain_without_an_id_lists_every_id() -> None:
    result = run_cli("explain")
    assert result.exit_code == 0, result.stderr
    listed = [line.split()[0] for line in result.stdout.splitlines()]
    assert listed == list(CATALOGUE)


def test_an_unknown_id_is_one_line_with_the_nearest_ids() -> None:
    result = run_cli("explain", "oom.kill")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == "forensics: unknown finding id 'oom.kill'; did you mean oom.killed?\n"
