"""scripts: the shell scripts that supervise the process in question, read where they run.

In the story the daemon's crash was swallowed by its wrapper (``if ! daemon | tee log``,
``$?`` read too late). This probe finds such wrappers on the host and reads them; nothing
is executed. Candidates, in this order, at most ``MAX_SCRIPTS``:

1. shells (bash, sh, dash, zsh, ash, busybox, ksh, mksh) that are the parent of a zombie, found
   in one pass over ``/proc/*/stat`` with the shell's ``read`` builtin;
2. with ``--focus``, the matching processes themselves (found by ``_fx_focus``) and their
   ancestors;
3. the paths given with ``--script`` (relative ones from the login directory, $HOME).

At most ``MAX_SHELLS`` shell processes are looked at, and ``MAX_SCRIPTS`` distinct files
read; a shell without a script file (``sh -c``) or running an already read file does not
count towards the latter.

The script path comes from the shell's command line, past its options (``-e``,
``-o pipefail``; ``-c`` and ``-s`` mean there is no script file). bash keeps the script
open on fd 255, so for bash the file is read through ``/proc/PID/fd/255``: the very file
it runs, even if moved, replaced or deleted since, and whatever ``cd`` it did. Other
shells: ``/proc/PID/cwd/ARG`` or ``/proc/PID/root/ARG``. Only regular files are read (a
pipe such as ``bash <(curl ...)`` would be consumed), each capped at ``MAX_BYTES``.

Output: one record per line, and every value that may hold any byte is framed by its line
count (``NAME COUNT``, then COUNT lines, then a last partial line and a newline), so no
script content can fake a record::

    scripts 1 262144 6
    zombie 28151 28149 python3
    zombies 1
    process 28149 1 zombie_parent
    comm 0
    bash
    cmdline 0
    bash^@w.sh^@
    script_index 1
    arg 0
    w.sh
    cwd 0
    /tmp/i6-9754
    path 0
    /tmp/i6-9754/w.sh
    via fd255
    size 95
    content 5
    #!/usr/bin/env bash
    set -euo pipefail
    if ! python3 zl.py 3 | tee log; then
      echo "exit $?"
    fi

(``^@`` is a NUL byte; a bash wrapper waiting on its ``Zl`` daemon.) Parsing is pure and
also runs the masking rules of ``forensics/shell/masking.py`` on each script; ShellCheck
is run by ``rules``, on this side, as a separate analysis step (``forensics/shell/shellcheck.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field, computed_field

from forensics.core.evidence import cite
from forensics.core.models import CollectOptions, EvidenceRef, Finding, SectionSpec, Severity
from forensics.core.probe import (
    Captures,
    Probe,
    ProbeFacts,
    RuleContext,
    open_section,
)
from forensics.core.redaction import redact
from forensics.remote.host_script import probe_shell
from forensics.shell.lint import ScriptLint, TextShape, describe_text
from forensics.shell.masking import MaskingAnalysis, find_masking
from forensics.shell.shellcheck import ShellCheckRun, run_shellcheck

SECTION = "scripts"
MAX_SCRIPTS = 6
MAX_BYTES = 256 * 1024
MAX_ZOMBIES_LISTED = 200
MAX_FOCUS_MATCHES = 20
MAX_SHELLS = 24  # shell processes looked at; only those with a script count to MAX_SCRIPTS

# Values framed by their line count; everything else is one line of words.
_BLOBS = frozenset({"comm", "cmdline", "arg", "cwd", "path", "content", "no_script", "focus_error"})


class ShellProcess(BaseModel):
    """A shell process that runs (or was asked about) a script."""

    pid: int
    ppid: int | None = None
    interpreter: str = Field(description="Its comm: bash, sh, dash, zsh, busybox, ...")
    command_line: str = Field(default="", description="Redacted.")
    interpreter_options: list[str] = Field(
        default_factory=list, description="Options before the script, e.g. -e -o pipefail."
    )
    script_argument: str | None = Field(default=None, description="As on its command line.")
    no_script: str | None = Field(
        default=None, description="Why it runs no script file: command string or stdin."
    )
    cwd: str | None = None
    zombie_children: list[int] = Field(default_factory=list)
    zombie_child_names: list[str] = Field(default_factory=list)
    is_focus: bool = False
    ancestor_of_focus: bool = False
    record_line: int = Field(description="Line of its record in the raw section.")
    record_text: str = Field(default="", description="That record line, verbatim.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def has_zombie_child(self) -> bool:
        return bool(self.zombie_children)

    @property
    def supervises_zombie_or_focus(self) -> bool:
        """The parent of a zombie, or the focus process or one of its ancestors."""
        return self.is_focus or self.ancestor_of_focus or self.has_zombie_child


class ScriptFile(BaseModel):
    path: str
    requested: bool = Field(default=False, description="Named with --script.")
    read_via: str | None = Field(
        default=None, description="fd255 (bash's open script), cwd, root or path."
    )
    deleted: bool = Field(default=False, description="Its file was deleted after it started.")
    processes: list[ShellProcess] = Field(default_factory=list)
    size_bytes: int | None = None
    truncated: bool = False
    content: str | None = Field(default=None, description="Redacted, line by line.")
    content_first_line: int | None = Field(
        default=None, description="Line of the raw section holding the script's line 1."
    )
    shape: TextShape | None = None
    analysis: MaskingAnalysis | None = None
    shellcheck: ShellCheckRun | None = Field(
        default=None, description="What ShellCheck said, run on this machine at analysis time."
    )
    unavailable: str | None = Field(default=None, description="Why it could not be read.")


class Zombie(BaseModel):
    pid: int
    ppid: int
    name: str
    record_line: int
    record_text: str = ""


class ScriptFacts(ProbeFacts):
    scripts: list[ScriptFile] = Field(default_factory=list)
    shells_without_script: list[ShellProcess] = Field(default_factory=list)
    zombies: list[Zombie] = Field(default_factory=list)
    zombie_count: int | None = None
    focus_matches: list[int] = Field(default_factory=list)
    focus_error: str | None = Field(default=None, description="grep -E rejected the regex.")
    skipped: list[str] = Field(
        default_factory=list, description="Shell processes left out: more than MAX_SHELLS."
    )


def sections(options: CollectOptions) -> list[SectionSpec]:
    shell = probe_shell(
        __name__,
        {
            "cap": MAX_BYTES,
            "most": MAX_SCRIPTS,
            "zombies_listed": MAX_ZOMBIES_LISTED,
            "shells_most": MAX_SHELLS,
            "focus_most": MAX_FOCUS_MATCHES if options.focus else None,
            "requested": options.scripts,
        },
    )
    budget = MAX_SCRIPTS * (MAX_BYTES + 16 * 1024) + 64 * 1024
    return [SectionSpec(name=SECTION, shell=shell, timeout_s=20, max_bytes=budget)]


@dataclass
class _Record:
    kind: str
    words: list[str]
    line: int
    values: dict[str, str] = field(default_factory=dict)
    value_lines: dict[str, int] = field(default_factory=dict)
    complete: dict[str, bool] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The record's line as the host wrote it (single spaces between words)."""
        return " ".join([self.kind, *self.words])


def parse(captures: Captures, options: CollectOptions) -> ScriptFacts:
    """Read the ``scripts`` section; run the masking rules on each script (pure).

    >>> from forensics.core.probe import Captured
    >>> text = (
    ...     "scripts 1 262144 6\\nzombie 4242 4240 python3\\nzombies 1\\n"
    ...     "process 4240 4102 zombie_parent\\ncomm 0\\nbash\\ncmdline 0\\n"
    ...     "bash\\x00-e\\x00bench.sh\\x00\\nscript_index 2\\narg 0\\nbench.sh\\ncwd 0\\n/srv\\n"
    ...     "path 0\\n/srv/bench.sh\\nvia fd255\\nsize 71\\ncontent 3\\n"
    ...     "set -uo pipefail\\nif ! ./daemon | tee log; then\\n  echo \\"exit $?\\"\\nfi\\n"
    ... )
    >>> facts = parse({"scripts": Captured.complete("scripts", text)}, CollectOptions())
    >>> script = facts.scripts[0]
    >>> script.path, script.content_first_line, script.processes[0].interpreter_options
    ('/srv/bench.sh', 19, ['-e'])
    >>> script.processes[0].zombie_children, script.processes[0].zombie_child_names
    ([4242], ['python3'])
    >>> [(issue.line, issue.pattern) for issue in script.analysis.issues]
    [(3, 'negated_status_read')]
    """
    captured, reason = open_section(captures, SECTION)
    if captured is None:
        return ScriptFacts(unavailable=reason)
    records = _records(captured.text.split("\n"))
    if not records or records[0].kind != "scripts":
        return ScriptFacts(unavailable="the scripts section did not print its header")
    facts = ScriptFacts(unavailable=reason)
    by_path: dict[str, ScriptFile] = {}
    for record in records:
        _read_record(record, facts, by_path)
    children: dict[int, list[Zombie]] = {}
    for zombie in facts.zombies:
        children.setdefault(zombie.ppid, []).append(zombie)
    for script in facts.scripts:
        for process in script.processes:
            process.zombie_children = [z.pid for z in children.get(process.pid, [])]
            process.zombie_child_names = [z.name for z in children.get(process.pid, [])]
        _analyse(script, options)
    return facts


def _records(lines: list[str]) -> list[_Record]:
    """Group the lines into records; a framed value takes exactly its announced lines."""
    records: list[_Record] = []
    index = 0
    while index < len(lines):
        words = lines[index].split(" ")
        name = words[0]
        if name in _BLOBS and len(words) == 2 and words[1].isdigit() and records:
            count = int(words[1])
            value_lines = lines[index + 1 : index + 2 + count]
            records[-1].values[name] = "\n".join(value_lines)
            records[-1].value_lines[name] = index + 2
            records[-1].complete[name] = len(value_lines) == count + 1
            index += 2 + count
            continue
        if name in ("via", "size", "script_index", "same", "error") and records:
            records[-1].values[name] = " ".join(words[1:]) or name
            index += 1
            continue
        if name:
            records.append(_Record(kind=name, words=words[1:], line=index + 1))
        index += 1
    return records


def _read_record(record: _Record, facts: ScriptFacts, by_path: dict[str, ScriptFile]) -> None:
    words, values = record.words, record.values
    if record.kind == "zombie" and len(words) >= 2 and words[0].isdigit() and words[1].isdigit():
        facts.zombies.append(
            Zombie(
                pid=int(words[0]),
                ppid=int(words[1]),
                name=" ".join(words[2:]),
                record_line=record.line,
                record_text=record.text,
            )
        )
    elif record.kind == "zombies" and words and words[0].isdigit():
        facts.zombie_count = int(words[0])
    elif record.kind == "focus" and words and words[0].isdigit():
        facts.focus_matches.append(int(words[0]))
    elif record.kind == "skipped" and words:
        facts.skipped.append(f"PID {words[0]}: more than {MAX_SHELLS} shells to look at")
    elif record.kind == "process" and len(words) >= 2 and words[0].isdigit():
        process = _process(record)
        if process.no_script is not None or "path" not in values:
            facts.shells_without_script.append(process)
        else:
            _script(record, facts, by_path).processes.append(process)
    elif record.kind == "requested" and "path" in values:
        _script(record, facts, by_path).requested = True
    if "focus_error" in values:
        facts.focus_error = values["focus_error"] or "grep -E rejected the focus regex"


def _process(record: _Record) -> ShellProcess:
    words, values = record.words, record.values
    argv = values.get("cmdline", "").rstrip("\x00").split("\x00")
    index_text = values.get("script_index", "")
    index = int(index_text) if index_text.isdigit() else None
    options = argv[1:index] if index is not None else []
    no_script = values.get("no_script")
    return ShellProcess(
        pid=int(words[0]),
        ppid=int(words[1]) if words[1].isdigit() else None,
        interpreter=values.get("comm", "?"),
        command_line=redact(" ".join(argv)),
        interpreter_options=[redact(option) for option in options],
        script_argument=values.get("arg"),
        no_script={"command": "runs a -c command string", "stdin": "reads commands from stdin"}.get(
            no_script or "", no_script
        ),
        cwd=values.get("cwd") or None,
        is_focus="focus" in words[2:],
        ancestor_of_focus="focus_ancestor" in words[2:],
        record_line=record.line,
        record_text=record.text,
    )


def _script(record: _Record, facts: ScriptFacts, by_path: dict[str, ScriptFile]) -> ScriptFile:
    values = record.values
    shown = values.get("path", "")
    deleted = shown.endswith(" (deleted)")
    path = shown.removesuffix(" (deleted)")
    known = by_path.get(path)
    if known is not None:
        return known
    script = ScriptFile(path=path, read_via=values.get("via"), deleted=deleted)
    by_path[path] = script
    facts.scripts.append(script)
    error = values.get("error")
    if error is not None:
        script.unavailable = _ERRORS.get(error, error)
        return script
    content = values.get("content")
    if content is None:
        script.unavailable = "the section ended before the script's content"
        return script
    size_text = values.get("size", "")
    script.size_bytes = int(size_text) if size_text.isdigit() else None
    script.content = "\n".join(redact(line) for line in content.split("\n"))
    script.content_first_line = record.value_lines["content"]
    cut_here = not record.complete.get("content", True)
    script.truncated = cut_here or (script.size_bytes or 0) > MAX_BYTES
    script.shape = describe_text(script.content)
    return script


_ERRORS = {
    "missing": "no such file on the host (moved, or the path is relative to a directory the "
    "process has since left)",
    "not_regular": "not a regular file (a pipe or device, as with `bash <(curl ...)`); "
    "reading it would consume it",
    "unreadable": "it could not be read (permission denied)",
    "cap": f"not read: {MAX_SCRIPTS} scripts were read already (the limit per host)",
}


def _analyse(script: ScriptFile, options: CollectOptions) -> None:
    if script.content is None:
        return
    process = script.processes[0] if script.processes else None
    supervised = [name for p in script.processes for name in p.zombie_child_names]
    script.analysis = find_masking(
        script.content,
        interpreter=process.interpreter if process is not None else None,
        interpreter_options=process.interpreter_options if process is not None else (),
        supervised=supervised,
        focus=options.focus,
    )


def examine(facts: ScriptFacts) -> ScriptFacts:
    """Run ShellCheck on this machine over every script read (never on the host); what it
    says becomes the script's ``shellcheck`` fact, for the rules to read."""
    for script in facts.scripts:
        if script.content is not None and script.analysis is not None:
            script.shellcheck = run_shellcheck(script.content, script.analysis.dialect)
    return facts


def rules(facts: ScriptFacts, context: RuleContext) -> list[Finding]:
    """``script.exit_status_masked`` per script with masking, ``script.lint`` for the rest."""
    findings: list[Finding] = []
    for script in facts.scripts:
        if script.content is None or script.analysis is None:
            findings.append(_unreadable(script))
            continue
        shellcheck = script.shellcheck or ShellCheckRun(problem="ShellCheck was not run")
        checked = ScriptLint(masking=script.analysis, shellcheck=shellcheck)
        if script.analysis.issues:
            findings.append(_masked(script, checked, facts))
        lint_finding = _lint(script, checked)
        if lint_finding is not None:
            findings.append(lint_finding)
    return findings


def _masked(script: ScriptFile, checked: ScriptLint, facts: ScriptFacts) -> Finding:
    issues = checked.masking.issues
    supervisors = [p for p in script.processes if p.supervises_zombie_or_focus]
    severity = Severity.critical if supervisors else Severity.warning
    first = issues[0]
    more = f", and {len(issues) - 1} more place(s)" if len(issues) > 1 else ""
    lines = []
    for issue in issues:
        agreeing = ", ".join(f"SC{code}" for code in checked.agreeing(issue))
        fix = "`, then `".join(part.strip() for part in issue.corrected.split("\n"))
        lines.append(
            f"Line {issue.line} ({issue.title}): {issue.explanation} Fix: `{fix}`."
            + (f" (ShellCheck agrees: {agreeing}.)" if agreeing else "")
        )
    who = _who(script)
    if script.processes:
        source = "the file the shell is running" + (
            " (its open fd 255)" if script.read_via == "fd255" else ""
        )
    else:
        source = f"{script.path} as read on the host"
    certainty = (
        f"The lines come from {source}; the patterns are certain from the text, whether "
        "they fired depends on the run."
    )
    if script.truncated:
        certainty += f" Only the first {MAX_BYTES} bytes were read."
    return Finding(
        id="script.exit_status_masked",
        severity=severity,
        title=f"{script.path} hides exit statuses: line {first.line}, {first.title}{more}",
        explanation=f"{who} {' '.join(lines)} {certainty}",
        next_steps=_next_steps(script),
        subject={
            "path": script.path,
            "pids": [p.pid for p in script.processes],
            "patterns": sorted({issue.pattern for issue in issues}),
            "lines": [issue.line for issue in issues],
        },
        evidence=_evidence(
            script, [(i.line, i.related_lines, i.excerpt) for i in issues], facts.zombies
        ),
    )


def _who(script: ScriptFile) -> str:
    if not script.processes:
        return f"{script.path} (named with --script) loses the exit status it acts on."
    parts = []
    for process in script.processes:
        roles = []
        if process.zombie_children:
            names = ", ".join(
                f"{pid} ({name})"
                for pid, name in zip(
                    process.zombie_children, process.zombie_child_names, strict=False
                )
            )
            roles.append(f"the parent of zombie PID {names}")
        if process.is_focus:
            roles.append("the focus process")
        if process.ancestor_of_focus:
            roles.append("an ancestor of the focus process")
        role = f", {' and '.join(roles)}" if roles else ""
        parts.append(f"{process.interpreter} PID {process.pid}{role}")
    return f"{script.path}, run by {'; '.join(parts)}, loses the exit status it acts on."


def _next_steps(script: ScriptFile) -> list[str]:
    steps = []
    for process in script.processes:
        for pid in process.zombie_children:
            steps.append(
                f"Read zombie {pid}'s real exit status from the kernel: "
                f"sed 's/.*) //' /proc/{pid}/stat | cut -d' ' -f50   (a wait status: "
                "10752 = exit 42, 139 = SIGSEGV + core; 0 while its threads still run)"
            )
    steps.append(
        f"Fix a copy of {script.path} and check it before redeploying: forensics lint-script "
        "FILE   (exit 1 while a masked status remains)"
    )
    steps.append(
        "Until it is fixed, trust the daemon's own log and exit status, not the wrapper's "
        "messages: they report success for every crash."
    )
    return steps


def _evidence(
    script: ScriptFile, places: Sequence[tuple[int, Sequence[int], str]], zombies: list[Zombie]
) -> list[EvidenceRef]:
    """The processes' records, their zombies' lines, then each place in the script."""
    evidence = []
    for process in script.processes:
        evidence.append(cite(SECTION, process.record_line, process.record_text))
        for zombie in zombies:
            if zombie.ppid == process.pid:
                evidence.append(cite(SECTION, zombie.record_line, zombie.record_text))
    base = script.content_first_line
    if base is None:
        return evidence
    for line, related, excerpt in places:
        near = [r for r in related if abs(r - line) <= 10]
        first, last = min([line, *near]), max([line, *near])
        evidence.append(
            cite(
                SECTION,
                base + first - 1,
                f"{script.path}:{line}: {excerpt}",
                last_line=base + last - 1,
            )
        )
    return evidence


def _lint(script: ScriptFile, checked: ScriptLint) -> Finding | None:
    notes = checked.other_notes()
    shape_notes = script.shape.notes() if script.shape is not None else []
    problem = checked.shellcheck.problem
    # ShellCheck missing, failing or timing out is a fact about this machine (the
    # script's `shellcheck`), never a finding about the host.
    if not notes and not shape_notes and not script.truncated:
        return None
    said = [f"line {n.line}: SC{n.code} {n.message}" for n in notes]
    parts = []
    if said:
        version = checked.shellcheck.version or "?"
        parts.append(f"ShellCheck {version} on error handling: " + "; ".join(said) + ".")
    if problem is not None:
        parts.append(f"{problem}.")
    if shape_notes:
        parts.append("The file: " + "; ".join(shape_notes) + ".")
    if script.truncated:
        parts.append(f"Only its first {MAX_BYTES} bytes were read and checked.")
    if notes:
        title = f"{script.path}: ShellCheck has {len(notes)} note(s) on error handling"
    else:
        title = f"{script.path}: " + (shape_notes[0] if shape_notes else "only partly read")
    return Finding(
        id="script.lint",
        severity=Severity.info,
        title=title,
        explanation=" ".join(parts),
        next_steps=[f"Review locally: forensics lint-script {script.path}"],
        subject={
            "path": script.path,
            "codes": sorted({n.code for n in notes}),
            "shellcheck": checked.shellcheck.version or "unavailable",
        },
        evidence=_evidence(script, [(n.line, [], f"SC{n.code}") for n in notes][:20], []),
    )


def _unreadable(script: ScriptFile) -> Finding:
    reason = script.unavailable or "its content did not come back"
    return Finding(
        id="script.lint",
        severity=Severity.info,
        title=f"Could not check {script.path}: {reason}",
        explanation=f"The script {script.path} was not analysed: {reason}. Whether it masks "
        "exit statuses is unknown, not ruled out.",
        next_steps=[
            *(f"See what the shell has open: ls -l /proc/{p.pid}/fd" for p in script.processes),
            "Copy the script here and run: forensics lint-script FILE",
        ],
        subject={"path": script.path, "problem": reason},
        evidence=_evidence(script, [], []),
    )


PROBE = Probe(
    name="scripts",
    run_order=80,
    report_order=60,
    sections=sections,
    facts_model=ScriptFacts,
    parse=parse,
    rules=rules,
    examine=examine,
)
