"""``forensics lint-script FILE...``: the masking rules and ShellCheck on local files, so a
wrapper's fix can be checked before it is redeployed. Same analysis as the ``scripts``
probe, plus the files a script ``source``s from beside it; exit 1 while a masked exit
status remains. CI hooks call it per file, so it imports only the shell analysis (see
``forensics/cli/entry.py``): one file gets the full account, many get one line each."""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, Field

from forensics.cli.messages import say
from forensics.core.escaping import inert
from forensics.core.exit_status import ExitStatus
from forensics.shell.lint import ScriptLint, TextShape, describe_text, lint
from forensics.shell.masking import MaskingAnalysis, find_masking
from forensics.shell.shellcheck import ShellCheckRun

MAX_BYTES = 4 * 1024 * 1024


class LintFormat(enum.StrEnum):
    text = "text"
    json = "json"


class FileLint(BaseModel):
    """What ``lint-script --format json`` prints per file."""

    path: str
    problem: str | None = Field(default=None, description="Why the file could not be read.")
    truncated: bool = False
    shape: TextShape | None = None
    analysis: MaskingAnalysis | None = None
    shellcheck: ShellCheckRun | None = None


def lint_script_command(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="Shell scripts to check.")],
    format: Annotated[LintFormat, typer.Option("--format", "-f")] = LintFormat.text,
    focus: Annotated[
        str | None,
        typer.Option(help="Regex naming the daemon the script runs: `daemon || true` is flagged."),
    ] = None,
    shell: Annotated[
        str | None,
        typer.Option(help="Read the files as this shell (bash, sh, dash, busybox, zsh, ksh)."),
    ] = None,
) -> None:
    """Find where shell scripts lose the exit status they act on.

    One FILE: every place, why, the fix. Several: one line per file (text format).
    Exit status: 0 nothing masked, 1 a masked exit status was found, 2 a file could not be
    read (said on stderr, one line each) or bad usage.

    Example: forensics lint-script benchmark.sh --format json
    """
    results = [_lint_file(path, focus, shell) for path in files]
    if format is LintFormat.json:
        document = [result.model_dump(mode="json") for result, _ in results]
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        for result, _ in results:
            if result.problem is not None:
                say(f"{result.path}: cannot read it ({result.problem})")
        readable = [(result, checked) for result, checked in results if result.problem is None]
        if len(results) == 1:
            sys.stdout.write("".join(_text(result, checked) for result, checked in readable))
        else:
            sys.stdout.write("".join(_one_line(result) for result, _ in readable))
    if any(result.problem for result, _ in results):
        raise typer.Exit(ExitStatus.usage)
    masked = any(result.analysis and result.analysis.issues for result, _ in results)
    raise typer.Exit(ExitStatus.findings if masked else ExitStatus.ok)


def _lint_file(
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


def application() -> typer.Typer:
    """``forensics lint-script`` as an app of its own, started without the rest of the CLI."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    app.command()(lint_script_command)
    return app


def _beside(directory: Path) -> Callable[[str], str | None]:
    """Reads a sourced file named relative to the script's directory."""

    def read(name: str) -> str | None:
        candidate = directory / name
        if not candidate.is_file():
            return None
        with candidate.open("rb") as stream:
            return stream.read(MAX_BYTES).decode("utf-8", "replace")

    return read


def _one_line(result: FileLint) -> str:
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


def _text(result: FileLint, checked: ScriptLint | None) -> str:
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
