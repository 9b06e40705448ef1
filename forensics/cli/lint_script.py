"""``forensics lint-script FILE...``: the masking rules and ShellCheck on local files, so a
wrapper's fix can be checked before it is redeployed. Same analysis as the ``scripts``
probe, plus the files a script ``source``s from beside it; exit 1 while a masked exit
status remains. CI hooks call it per file, so it imports only the shell analysis (see
``forensics/cli/entry.py``), and that only when it runs (``forensics/cli/lint_files.py``):
one file gets the full account, many get one line each."""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from forensics.cli.messages import say
from forensics.core.exit_status import ExitStatus


class LintFormat(enum.StrEnum):
    text = "text"
    json = "json"


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
    from forensics.cli.lint_files import lint_file, one_line, text

    results = [lint_file(path, focus, shell) for path in files]
    if format is LintFormat.json:
        document = [result.model_dump(mode="json") for result, _ in results]
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        for result, _ in results:
            if result.problem is not None:
                say(f"{result.path}: cannot read it ({result.problem})")
        readable = [(result, checked) for result, checked in results if result.problem is None]
        if len(results) == 1:
            sys.stdout.write("".join(text(result, checked) for result, checked in readable))
        else:
            sys.stdout.write("".join(one_line(result) for result, _ in readable))
    if any(result.problem for result, _ in results):
        raise typer.Exit(ExitStatus.usage)
    masked = any(result.analysis and result.analysis.issues for result, _ in results)
    raise typer.Exit(ExitStatus.findings if masked else ExitStatus.ok)


def application() -> typer.Typer:
    """``forensics lint-script`` as an app of its own, started without the rest of the CLI."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    app.command()(lint_script_command)
    return app
