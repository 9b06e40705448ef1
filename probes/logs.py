"""logs: the log files that matter, filtered on the host so only what matters comes back.

Which files: every match of ``--log GLOB`` (newest first, at most ``MAX_FILES_PER_GLOB``),
every ``--expect-log PATH`` (whose absence is itself the news), and, with ``--focus``, the
regular files the focus process holds open for writing (``/proc/PID/fd`` with the write
bits of ``/proc/PID/fdinfo``), which finds logs nobody configured. For each file the host
sends its size, mtime and owner, its last lines (``tail -c`` bounds the bytes, ``awk``
keeps the last N lines and cuts long ones), and the lines matching ``ERROR_PATTERN``
anywhere in the file (``grep -n``: counted, only the first and last few sent)::

    limits 50 16384 400 5
    btime 1764441600
    clock 1764450000
    clk_tck 100
    focus_pid 4242 4242 (cuzk) S 1 4242 4242 0 -1 4194560 ... 840000 ...
    glob /work/logs/bench*.log
    file glob /work/logs/bench.log
    stat 4089 1764442402 0 root
    tail
    |[prove] loading params
    |[prove] CUDA error: out of memory
    tail_read 41
    errors
    |40:[prove] CUDA error: out of memory
    errors_count 1
    expected_missing /var/log/supervisor.log

Every line of file content starts with ``|``, so no log line can pass for a record. The
host runs ``logs.sh``; the focus processes come from ``_fx_focus``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from forensics.core.evidence import cite
from forensics.core.focus import FocusProcess, parse_focus_line
from forensics.core.models import CollectOptions, Finding, SectionSpec, Severity
from forensics.core.probe import (
    Captures,
    Probe,
    ProbeFacts,
    RuleContext,
    open_section,
)
from forensics.core.redaction import redact
from forensics.core.timeline_event import LOG_LAST_WRITE, TimelineEvent
from forensics.core.units import describe_duration
from forensics.remote.host_script import probe_shell, shell_quote

SECTION = "logs"
TAIL_BYTES = 16384
LINE_CHARS = 400
ERRORS_KEPT_EACH_END = 5
MAX_FILES_PER_GLOB = 16
MAX_OPEN_FILES_PER_PROCESS = 16
MAX_FOCUS_PROCESSES = 8
STALE_AFTER_S = 600
# Matched case-insensitively; the words must not continue another word ("liberror").
ERROR_PATTERN = (
    "(^|[^a-z0-9_-])(panic|traceback|cuda error|out of memory|std::bad_alloc|killed|segfault"
    "|segmentation fault|fatal|error)"
)


class LogLine(BaseModel):
    raw_line: int = Field(description="Line in the raw `logs` section.")
    text: str
    file_line: int | None = Field(default=None, description="Line number in the log itself.")


class LogFile(BaseModel):
    path: str = Field(description="As the host named it; ' (deleted)' kept for open files.")
    sources: list[str] = Field(description="glob, expected, or open:PID:FD.")
    raw_line: int = Field(description="Line of the file record in the raw section.")
    stat_line: int | None = None
    readable: bool = True
    compressed: bool = False
    size_bytes: int | None = None
    modified: datetime | None = Field(default=None, description="Last write (mtime), UTC.")
    owner: str | None = None
    tail: list[LogLine] = Field(default_factory=list)
    tail_first_line_cut: bool = Field(
        default=False, description="The first tail line starts mid-line (byte cap)."
    )
    error_count: int | None = Field(default=None, description="None when not scanned.")
    errors: list[LogLine] = Field(default_factory=list, description="First and last matches.")

    @property
    def open_by(self) -> list[int]:
        return [int(s.split(":")[1]) for s in self.sources if s.startswith("open:")]

    @property
    def deleted(self) -> bool:
        return self.path.endswith(" (deleted)")


class ExpectedLog(BaseModel):
    path: str
    present: bool
    directory_present: bool
    raw_line: int


class GlobResult(BaseModel):
    pattern: str
    matched: bool = True
    capped: bool = False
    raw_line: int


class LogsFacts(ProbeFacts):
    requested: bool = Field(default=False, description="Any --log, --expect-log or --focus.")
    host_clock: datetime | None = None
    boot_time: datetime | None = None
    globs: list[GlobResult] = Field(default_factory=list)
    files: list[LogFile] = Field(default_factory=list)
    expected: list[ExpectedLog] = Field(default_factory=list)
    focus_processes: list[FocusProcess] = Field(default_factory=list)
    focus_capped: int | None = Field(default=None, description="Matches beyond the cap.")
    focus_error: str | None = Field(default=None, description="grep's complaint about --focus.")


def _requested(options: CollectOptions) -> bool:
    return bool(options.logs or options.expected_logs or options.focus)


def sections(options: CollectOptions) -> list[SectionSpec]:
    if not _requested(options):
        return []
    shell = probe_shell(
        __name__,
        {
            "log_lines": options.log_lines,
            "tail_bytes": TAIL_BYTES,
            "line_chars": LINE_CHARS,
            "errors_kept": ERRORS_KEPT_EACH_END,
            "error_pattern": ERROR_PATTERN,
            "per_glob": MAX_FILES_PER_GLOB,
            "per_process": MAX_OPEN_FILES_PER_PROCESS,
            "globs": options.logs,
            "expected": options.expected_logs,
            "focus_most": MAX_FOCUS_PROCESSES if options.focus else None,
        },
    )
    return [SectionSpec(name=SECTION, shell=shell, timeout_s=30, max_bytes=2 << 20)]


class _Reader:
    """Walks the section's lines once; ``mode`` says where ``|`` content lines belong."""

    def __init__(self) -> None:
        self.facts = LogsFacts(requested=True)
        self.by_path: dict[str, LogFile] = {}
        self.current: LogFile | None = None
        self.mode: str | None = None
        self.limits = (50, TAIL_BYTES)
        self.tail_read = 0
        self.clock_ticks = 100

    def line(self, number: int, line: str) -> None:
        if line.startswith("|"):
            self._content(number, line[1:])
            return
        key, _, value = line.partition(" ")
        # Bundles of earlier versions name records with hyphens (focus-pid, tail-read).
        handler = _HANDLERS.get(key.replace("-", "_"))
        if handler is not None:
            handler(self, number, value)

    def _content(self, number: int, text: str) -> None:
        if self.current is None:
            return
        if self.mode == "tail":
            self.current.tail.append(LogLine(raw_line=number, text=text))
        elif self.mode == "errors":
            head, sep, rest = text.partition(":")
            if sep and head.isdigit():
                entry = LogLine(raw_line=number, text=rest, file_line=int(head))
            else:
                entry = LogLine(raw_line=number, text=text)
            self.current.errors.append(entry)

    def _limits(self, number: int, value: str) -> None:
        words = value.split()
        if len(words) >= 2 and words[0].isdigit() and words[1].isdigit():
            self.limits = (int(words[0]), int(words[1]))

    def _btime(self, number: int, value: str) -> None:
        self.facts.boot_time = _epoch(value)

    def _clock(self, number: int, value: str) -> None:
        self.facts.host_clock = _epoch(value)

    def _clk_tck(self, number: int, value: str) -> None:
        if value.strip().isdigit() and int(value) > 0:
            self.clock_ticks = int(value)

    def _focus_pid(self, number: int, value: str) -> None:
        process = parse_focus_line(
            "focus_pid " + value, number, self.facts.boot_time, self.clock_ticks
        )
        if process is not None:
            self.facts.focus_processes.append(process)

    def _focus_capped(self, number: int, value: str) -> None:
        self.facts.focus_capped = int(value) if value.strip().isdigit() else None

    def _focus_error(self, number: int, value: str) -> None:
        self.facts.focus_error = value.strip()

    def _glob(self, number: int, value: str) -> None:
        self.facts.globs.append(GlobResult(pattern=value, raw_line=number))

    def _glob_empty(self, number: int, value: str) -> None:
        for glob in self.facts.globs:
            if glob.pattern == value:
                glob.matched = False

    def _glob_more(self, number: int, value: str) -> None:
        for glob in self.facts.globs:
            if glob.pattern == value:
                glob.capped = True

    def _expected_present(self, number: int, value: str) -> None:
        self.facts.expected.append(
            ExpectedLog(path=value, present=True, directory_present=True, raw_line=number)
        )

    def _expected_missing(self, number: int, value: str) -> None:
        self.facts.expected.append(
            ExpectedLog(path=value, present=False, directory_present=True, raw_line=number)
        )

    def _expected_missing_directory(self, number: int, value: str) -> None:
        self.facts.expected.append(
            ExpectedLog(path=value, present=False, directory_present=False, raw_line=number)
        )

    def _file(self, number: int, value: str) -> None:
        self._finish_file()
        source, _, path = value.partition(" ")
        record = LogFile(path=path, sources=[source], raw_line=number)
        known = self.by_path.get(path)
        if known is not None:
            # The same file seen again (glob and expected): one record, both sources.
            if source not in known.sources:
                known.sources.append(source)
        else:
            self.by_path[path] = record
            self.facts.files.append(record)
        self.current = record
        self.mode = None

    def _unreadable(self, number: int, value: str) -> None:
        if self.current is not None:
            self.current.readable = False

    def _compressed(self, number: int, value: str) -> None:
        if self.current is not None:
            self.current.compressed = True

    def _stat(self, number: int, value: str) -> None:
        words = value.split(" ", 3)
        if self.current is None or len(words) < 3:
            return
        self.current.stat_line = number
        if words[0].isdigit():
            self.current.size_bytes = int(words[0])
        self.current.modified = _epoch(words[1])
        self.current.owner = words[3] if len(words) > 3 and words[3] != "UNKNOWN" else words[2]

    def _tail(self, number: int, value: str) -> None:
        self.mode = "tail"

    def _tail_read(self, number: int, value: str) -> None:
        self.tail_read = int(value) if value.strip().isdigit() else 0

    def _errors(self, number: int, value: str) -> None:
        self.mode = "errors"

    def _errors_count(self, number: int, value: str) -> None:
        if self.current is not None and value.strip().isdigit():
            self.current.error_count = int(value)
        self.mode = None

    def _finish_file(self) -> None:
        record = self.current
        if record is None:
            return
        lines, cap = self.limits
        if record.tail and (record.size_bytes or 0) > cap and self.tail_read <= lines:
            record.tail_first_line_cut = True
        self.current, self.mode, self.tail_read = None, None, 0

    def finish(self) -> LogsFacts:
        self._finish_file()
        return self.facts


_HANDLERS: dict[str, Callable[[_Reader, int, str], None]] = {
    "limits": _Reader._limits,
    "btime": _Reader._btime,
    "clock": _Reader._clock,
    "clk_tck": _Reader._clk_tck,
    "focus_pid": _Reader._focus_pid,
    "focus_capped": _Reader._focus_capped,
    "focus_error": _Reader._focus_error,
    "glob": _Reader._glob,
    "glob_empty": _Reader._glob_empty,
    "glob_more": _Reader._glob_more,
    "expected_present": _Reader._expected_present,
    "expected_missing": _Reader._expected_missing,
    "expected_missing_directory": _Reader._expected_missing_directory,
    "file": _Reader._file,
    "unreadable": _Reader._unreadable,
    "compressed": _Reader._compressed,
    "stat": _Reader._stat,
    "tail": _Reader._tail,
    "tail_read": _Reader._tail_read,
    "errors": _Reader._errors,
    "errors_count": _Reader._errors_count,
}


def parse(captures: Captures, options: CollectOptions) -> LogsFacts:
    """Read the ``logs`` section.

    >>> from forensics.core.probe import Captured
    >>> text = (
    ...     "limits 50 16384 400 5\\nclock 1764450000\\nglob /w/bench*.log\\n"
    ...     "file glob /w/bench.log\\nstat 4089 1764442402 0 root\\ntail\\n|loading\\n"
    ...     "|CUDA error: out of memory\\ntail_read 2\\nerrors\\n|2:CUDA error: out of memory\\n"
    ...     "errors_count 1\\nexpected_missing /var/log/supervisor.log\\n"
    ... )
    >>> facts = parse({"logs": Captured.complete("logs", text)}, CollectOptions(logs=("x",)))
    >>> log = facts.files[0]
    >>> log.path, log.size_bytes, log.modified.isoformat(), [l.text for l in log.tail]
    ('/w/bench.log', 4089, '2025-11-29T18:53:22+00:00', ['loading', 'CUDA error: out of memory'])
    >>> log.error_count, log.errors[0].file_line, log.errors[0].raw_line
    (1, 2, 11)
    >>> [(e.path, e.present) for e in facts.expected]
    [('/var/log/supervisor.log', False)]
    """
    if not _requested(options) and SECTION not in captures:
        return LogsFacts()
    captured, reason = open_section(captures, SECTION)
    if captured is None:
        return LogsFacts(requested=True, unavailable=reason)
    reader = _Reader()
    for number, line in enumerate(captured.text.split("\n"), start=1):
        reader.line(number, line)
    facts = reader.finish()
    facts.unavailable = reason
    for log in facts.files:
        _redact_as_blocks(log.tail)
        _redact_as_blocks(log.errors)
    return facts


def _redact_as_blocks(lines: list[LogLine]) -> None:
    """Redact a run of log lines as the one text it is, so a secret spread over lines (a
    private key's BEGIN, body and END) is seen whole; line for line, so numbers hold.

    >>> key = ["-----BEGIN RSA PRIVATE KEY-----", "MIIEowIBAAKC", "-----END RSA PRIVATE KEY-----"]
    >>> lines = [LogLine(raw_line=n, text=t) for n, t in enumerate(key)]
    >>> _redact_as_blocks(lines); [line.text for line in lines][1]
    '[REDACTED]'
    """
    redacted = redact("\n".join(line.text for line in lines)).split("\n")
    if len(redacted) != len(lines):
        return  # a rule changed the line count: leave it to the per-string redaction
    for line, text in zip(lines, redacted, strict=True):
        line.text = text


def _epoch(text: str) -> datetime | None:
    text = text.strip()
    if not text.isdigit() or len(text) > 11:
        return None
    return datetime.fromtimestamp(int(text), UTC)


def rules(facts: LogsFacts, context: RuleContext) -> list[Finding]:
    findings = [_expected_missing(expected) for expected in facts.expected if not expected.present]
    findings += _stale(facts)
    findings += [_errors(log) for log in facts.files if log.error_count and log.errors]
    return findings


def _expected_missing(expected: ExpectedLog) -> Finding:
    directory = expected.path.rsplit("/", 1)[0] or "/"
    if expected.directory_present:
        why = f"Its directory {directory} exists, but the file does not."
    else:
        why = f"Not even its directory {directory} exists."
    return Finding(
        id="log.expected_missing",
        severity=Severity.warning,
        title=f"Expected log {expected.path} does not exist",
        explanation=(
            f"You said {expected.path} should exist (--expect-log). {why} Either the program "
            "never started, logs somewhere else, or could not create the file (full disk, "
            "permissions, a wrapper that redirects elsewhere). Sure: the host checked the path "
            "itself."
        ),
        next_steps=[
            f"ls -la {shell_quote(directory)}",
            "Find where the process really writes: ls -l /proc/PID/fd (or re-run with --focus)",
            "Check the disk findings: a full filesystem cannot take a new file",
        ],
        subject={"path": expected.path, "directory_present": expected.directory_present},
        evidence=[
            cite(
                SECTION,
                expected.raw_line,
                f"{expected.path}: missing"
                + ("" if expected.directory_present else " (directory missing too)"),
            )
        ],
    )


def _stale(facts: LogsFacts) -> list[Finding]:
    """A live focus process whose log has been silent for longer than ``STALE_AFTER_S``."""
    alive = [p for p in facts.focus_processes if p.alive]
    if not alive or facts.host_clock is None:
        return []
    findings = []
    for log, writer in _logs_of(facts, alive):
        if log.modified is None or log.stat_line is None:
            continue
        silent_s = (facts.host_clock - log.modified).total_seconds()
        if silent_s <= STALE_AFTER_S:
            continue
        silent = describe_duration(silent_s)
        findings.append(
            Finding(
                id="log.stale",
                severity=Severity.warning,
                title=f"{log.path} has not been written for {silent} while "
                f"{writer.name} (pid {writer.pid}) is still running",
                explanation=(
                    f"The process matching --focus is alive (state {writer.state}), but its log "
                    f"was last written at {_utc(log.modified)}, {silent} before the collection"
                    + (f"; the process started at {_utc(writer.started)}" if writer.started else "")
                    + ". It may be hung, blocked on I/O, waiting on a lock, or writing elsewhere. "
                    "Sure about the times (host clock); whether silence is abnormal depends on how "
                    "chatty the program is."
                ),
                next_steps=[
                    f"cat /proc/{writer.pid}/wchan /proc/{writer.pid}/stack (what it waits on)",
                    f"ls -l /proc/{writer.pid}/fd (is it writing another file?)",
                    f"py-spy dump --pid {writer.pid} or gdb -p {writer.pid} -batch -ex 'thread "
                    "apply all bt' for a stack",
                ],
                subject={"path": log.path, "pid": writer.pid, "silent_s": round(silent_s)},
                evidence=[
                    cite(
                        SECTION,
                        log.stat_line,
                        f"{log.path}: {log.size_bytes} bytes, last write {_utc(log.modified)}",
                    ),
                    cite(
                        SECTION,
                        writer.raw_line,
                        f"pid {writer.pid} ({writer.name}) state {writer.state}",
                    ),
                ],
            )
        )
    return findings


def _logs_of(facts: LogsFacts, alive: list[FocusProcess]) -> list[tuple[LogFile, FocusProcess]]:
    """Which logs belong to which live process: the files it has open for writing; else
    the watched logs (the newest match of each glob, and the expected ones)."""
    pairs = []
    for process in alive:
        opened = [log for log in facts.files if process.pid in log.open_by]
        pairs += [(log, process) for log in opened]
    if pairs:
        return pairs
    watched: list[LogFile] = []
    seen_globs: set[str] = set()
    for log in facts.files:
        if "expected" in log.sources:
            watched.append(log)
        elif "glob" in log.sources:
            glob = _glob_of(facts, log)
            if glob not in seen_globs:
                seen_globs.add(glob)
                watched.append(log)
    return [(log, alive[0]) for log in watched]


def _glob_of(facts: LogsFacts, log: LogFile) -> str:
    """The glob record a file came from: the last one announced before it."""
    owner = ""
    for glob in facts.globs:
        if glob.raw_line < log.raw_line:
            owner = glob.pattern
    return owner


def _errors(log: LogFile) -> Finding:
    first, last = log.errors[0], log.errors[-1]
    count = log.error_count or len(log.errors)
    evidence = [cite(SECTION, first.raw_line, f"{log.path}:{first.file_line}: {first.text}")]
    if last is not first:
        evidence.append(cite(SECTION, last.raw_line, f"{log.path}:{last.file_line}: {last.text}"))
    return Finding(
        id="log.errors",
        severity=Severity.warning,
        title=f"{log.path} has {count} error line{'s' if count != 1 else ''} "
        f"(last at line {last.file_line}: {last.text[:80]})",
        explanation=(
            f"{count} line(s) of {log.path} match panic, Traceback, CUDA error, out of memory, "
            "std::bad_alloc, Killed, segfault, fatal or error (case-insensitive), anywhere in the "
            "file. The first and the last are shown; the last one is usually the cause, the first "
            "one tells when trouble began. A plain 'error' may be harmless: read the line."
        ),
        next_steps=[
            f"grep -n -i -E {shell_quote(ERROR_PATTERN)} {shell_quote(log.path)} | less",
            f"sed -n '{max(1, (last.file_line or 1) - 20)},{(last.file_line or 1) + 5}p' "
            f"{shell_quote(log.path)} (context of the last one)",
        ],
        subject={"path": log.path, "count": count},
        evidence=evidence,
    )


def _utc(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "unknown"


def timeline(facts: LogsFacts) -> list[TimelineEvent]:
    return [
        TimelineEvent(
            time=log.modified,
            source=SECTION,
            line=log.stat_line,
            kind=LOG_LAST_WRITE,
            text=f"last write to {log.path} ({log.size_bytes} bytes)",
        )
        for log in facts.files
        if log.modified is not None
    ]


PROBE = Probe(
    name="logs",
    run_order=50,
    report_order=50,
    sections=sections,
    facts_model=LogsFacts,
    parse=parse,
    timeline=timeline,
    rules=rules,
)
