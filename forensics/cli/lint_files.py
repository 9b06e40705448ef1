"""What ``forensics lint-script`` reports per file: the masking analysis and ShellCheck on
one local file, in JSON (``FileLint``) or as text. Apart from the command so that
``forensics --help`` loads neither pydantic nor the shell analysis."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from forensics.core.escaping import inert
from forensics.shell.lint import ScriptLint, TextShape, describe_text, lint
from forensics.shell.masking import MaskingAnalysis, find_masking
from forensics.shell.shellcheck import ShellCheckRun

MAX_BYTES = 4 * 1024 * 1024


class FileLint(BaseModel):
    """What ``lint-script --format json`` prints per file."""

    path: str
    problem: str | None = Field(default=None, description="Why the file could not be read.")
    truncated: bool = False
    shape: TextShape | None = None
    analysis: MaskingAnalysis | None = None
    shellcheck: ShellCheckRun | None = None


def lint_file(
    path: Path, focus: str | None, shell: str | None
) -> tuple[FileLint, ScriptLint | None]:
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_BYTES + 1)
    except OSError as error:
        return FileLint(path=str(path), problem=error.strerror or str(error)), None
    text = data[:MAX_BYTES].decode("utf-8", "replace")
    analysis = find_masking(
        text, interpreter=shell, focus=focus, read_source=_beside(path.resolve().parent)
    )
    checked = lint(text, analysis)
    result = FileLint(
        path=str(path),
        truncated=len(data) > MAX_BYTES,
        shape=describe_text(text),
        analysis=analysis,
        shellcheck=checked.shellcheck,
    )
    return result, checked


def _beside(directory: Path) -> Callable[[str], str | None]:
    """Reads a sourced file named relative to the script's directory."""

    def read(name: str) -> str | None:
        candidate = directory / name
        if not candidate.is_file():
            return None
        with candidate.open("rb") as stream:
            return stream.read(MAX_BYTES).decode("utf-8", "replace")

    return read


def one_line(result: FileLint) -> str:
    path = inert(result.path)
    analysis = result.analysis
    if result.problem is not None or analysis is None:
        return f"{path}: cannot read: {result.problem}\n"
    if not analysis.issues:
        return f"{path}: no masked exit status\n"
    places = "; ".join(
        f"{inert(issue.file) + ':' if issue.file else ''}{issue.line} {issue.title}"
        for issue in analysis.issues
    )
    return f"{path}: exit status masked at {len(analysis.issues)} place(s): {places}\n"


def text(result: FileLint, checked: ScriptLint | None) -> str:
    path = inert(result.path)
    if result.problem is not None or checked is None or result.analysis is None:
        return f"{path}: cannot read: {result.problem}\n"
    analysis = result.analysis
    settings = (
        f"{analysis.dialect}; set -e: {'yes' if analysis.errexit else 'no'}; "
        f"pipefail: {'yes' if analysis.pipefail else 'no'}"
    )
    if analysis.issues:
        out = [f"{path}: exit status masked at {len(analysis.issues)} place(s) ({settings})\n"]
    else:
        out = [f"{path}: no masked exit status ({settings})\n"]
    if analysis.dialect_note:
        out.append(f"  note: {inert(analysis.dialect_note)}\n")
    for issue in analysis.issues:
        where = inert(issue.file) if issue.file else path
        out.append(f"  {where}:{issue.line}: {issue.title}\n")
        out.append(f"      {inert(issue.excerpt)}\n")
        out.append(f"    why: {inert(issue.explanation)}\n")
        fix = inert(issue.corrected).replace("\n", "\n         ")
        out.append(f"    fix: {fix}\n")
        agreeing = checked.agreeing(issue)
        if agreeing:
            out.append(f"    ShellCheck agrees: {', '.join(f'SC{code}' for code in agreeing)}\n")
    run = checked.shellcheck
    if run.problem is not None:
        out.append(f"  {run.problem}\n")
    else:
        for note in checked.other_notes():
            out.append(
                f"  {path}:{note.line}: SC{note.code} ({note.level}) {inert(note.message)}\n"
            )
    for sourced in analysis.sourced:
        if sourced.problem is not None:
            out.append(
                f"  note: line {sourced.line} sources {inert(sourced.name)}: {sourced.problem}\n"
            )
    out.extend(f"  note: {inert(note.text)}\n" for note in analysis.notes)
    if result.shape is not None:
        out.extend(f"  note: {note}\n" for note in result.shape.notes())
    if result.truncated:
        out.append(f"  note: only the first {MAX_BYTES} bytes were checked\n")
    return "".join(out)
