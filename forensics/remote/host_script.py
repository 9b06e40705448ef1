"""Compose the one POSIX sh script that runs every section on the host, and read its output.

The host gets one script per run. Each section runs under its own timeout (or, when it
only reads files, in the script's own shell under the script's one deadline), its stdout
goes to a file in a private temp dir, and only then is it framed on the wire::

    \\n<nonce> START <name>\\n
    \\n<nonce> DATA <name> <rc> <t0> <t1> <size> <timeout-mode>\\n
    <exactly min(size, cap) bytes of stdout>
    \\n<nonce> ERR <one line of stderr>          (at most 20)
    \\n<nonce> END <name>\\n

The reader takes exactly the announced number of bytes, so no output of the host can forge
or split a boundary, whatever it prints; the per-run nonce keeps the reader from mistaking
host output for framing when it resynchronises. ``t0``/``t1`` are /proc/uptime readings
(read with the shell's builtin ``read``: no process) from which the duration follows.
The section running when the stream ended is the last one started that never sent its
frame.

The shell itself lives in ``.sh`` files: ``host_script.sh`` (the prelude: private directory,
traps, ``_fx_sec``), ``focus.sh`` (``_fx_focus``, written into the private directory when
there is a ``--focus``) and each probe's ``probes/<name>.sh``. Their inputs come from a
preamble of ``name='value'`` lines (``assignments``); no text is substituted inside them.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from forensics.core.focus import host_octal
from forensics.core.models import SectionResult, SectionSpec

STDERR_LINES_KEPT = 20
# The script cuts each stderr line it frames at this many bytes (printf's %.Ns).
STDERR_LINE_BYTES = 512
# A frame's header line is short (a name and six numbers); a longer one is not ours.
MAX_FRAME_LINE = 256
FATAL_KEPT = 200
TIMEOUT_KILL_GRACE_S = 2

# Exit statuses that mean "killed by our timeout": GNU timeout's 124, and SIGTERM/SIGKILL
# deaths (busybox timeout, the watchdog, or -k escalation), told apart by the elapsed time.
_TIMEOUT_STATUSES = frozenset({124, 137, 143})

# The DATA header, every field checked: what the script's printf writes and nothing else.
# Uptimes are /proc/uptime readings ("0" when unreadable); the size fits an off_t.
_DATA = re.compile(
    r"DATA (?P<name>[A-Za-z0-9_]{1,64}) (?P<rc>[0-9]{1,3}) "
    r"(?P<t0>[0-9]{1,12}(?:\.[0-9]{1,6})?) (?P<t1>[0-9]{1,12}(?:\.[0-9]{1,6})?) "
    r"(?P<size>[0-9]{1,18}) (?P<mode>[ktw])",
    re.ASCII,
)


@dataclass(frozen=True)
class Script:
    """The script that runs on the host, with what is needed to read its output back."""

    text: str
    nonce: str
    sections: tuple[SectionSpec, ...]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def max_output_bytes(self) -> int:
        """The most this script writes on stdout: each section's cap and its frames (START,
        DATA, END, at most ``STDERR_LINES_KEPT`` cut stderr lines), and a FATAL line.
        A host that sends more is not running it; the reader stops there.

        >>> compose([SectionSpec(name="a", shell="true", max_bytes=1000)]).max_output_bytes
        13152
        """
        frame = len(self.nonce) + MAX_FRAME_LINE
        errors = STDERR_LINES_KEPT * (len(self.nonce) + len(" ERR \n") + STDERR_LINE_BYTES)
        sections = sum(spec.max_bytes + 3 * frame + errors for spec in self.sections)
        return sections + frame


def shell_quote(text: str) -> str:
    """Quote ``text`` as one word for POSIX sh.

    >>> print(shell_quote("it's"))
    'it'"'"'s'
    """
    return "'" + text.replace("'", "'\"'\"'") + "'"


def compose(
    sections: Sequence[SectionSpec],
    nonce: str | None = None,
    focus: str | None = None,
    deadline_s: float | None = None,
) -> Script:
    """One script for all sections: the opening ones, then the rest in the order given
    (callers put cheap ones first), then the closing ones (``SectionSpec.place``), so that
    a section that waits (the second process snapshot) waits while the others run.

    A section that runs commands that can hang runs under its own timeout (``_fx_sec``:
    ``timeout`` + ``sh``); an ``in_shell`` one runs in the script's shell (``_fx_in``), and
    then one watchdog ends the whole script after ``deadline_s`` (``--timeout``; by default
    the sum of the sections' timeouts), so nothing on the host outlives the collection.

    The prelude (``host_script.sh``) makes the private directory, writes ``focus.sh`` and,
    with ``focus``, the regex into it, and defines ``_fx_sec``, which runs one section.
    It also carries this machine's boot id and this process's pids (``client_identity``):
    when the host turns out to be this very machine (``collect root@127.0.0.1``), they
    join the collection's own processes, which never match ``--focus``.
    """
    nonce = nonce or secrets.token_hex(16)
    sections = run_order(sections)
    names = [s.name for s in sections]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate section names: {names}")
    calls = [
        f"_fx_in {s.name} {s.max_bytes} {shell_quote(s.shell)}"
        if s.in_shell
        else f"_fx_sec {s.name} {_seconds(s.timeout_s)} {s.max_bytes} {shell_quote(s.shell)}"
        for s in sections
    ]
    if any(s.in_shell for s in sections):
        whole = deadline_s if deadline_s is not None else sum(s.timeout_s for s in sections)
        calls.insert(0, f"_fx_deadline {math.ceil(whole)}")
    text = prelude(nonce, focus) + "\n".join(calls) + "\n"
    return Script(text=text, nonce=nonce, sections=tuple(sections))


_PLACES = {"opening": 0, "in_order": 1, "closing": 2}


def run_order(sections: Sequence[SectionSpec]) -> list[SectionSpec]:
    """``sections`` as the host runs them: opening ones first and closing ones last, each
    group in the order given.

    >>> first = SectionSpec(name="snapshot", shell="true", place="opening")
    >>> last = SectionSpec(name="again", shell="true", place="closing")
    >>> [s.name for s in run_order([SectionSpec(name="a", shell="true"), last, first])]
    ['snapshot', 'a', 'again']
    """
    return sorted(sections, key=lambda spec: _PLACES[spec.place])


def client_identity() -> tuple[str, tuple[int, ...]]:
    """This machine's boot id and the pids of this process and its ancestors (PID 1
    aside); ``("", ())`` where /proc cannot tell.

    >>> boot, pids = client_identity()
    >>> pids[0] == os.getpid() if pids else True
    True
    """
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "", ()
    pids: list[int] = []
    pid = os.getpid()
    while pid > 1 and len(pids) < 64:
        pids.append(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0
    return boot, tuple(pids)


def prelude(nonce: str, focus: str | None) -> str:
    """The start of every script run on the host: the preamble of its inputs, then
    ``host_script.sh`` (private directory, traps, ``focus.sh``, ``_fx_sec``); the host
    script's sections follow it, and so does the flight recorder's loop."""
    client_boot, client_pids = client_identity()
    preamble = assignments(
        {
            "_fx_n": nonce,
            "_fx_kill": TIMEOUT_KILL_GRACE_S,
            "_fx_errlines": STDERR_LINES_KEPT,
            "_fx_errbytes": STDERR_LINE_BYTES,
            "_fx_focus_octal": host_octal(focus) if focus else "",
            "_fx_focus_sh": shell_file("forensics.remote", "focus.sh") if focus else "",
            "_fx_client_boot": client_boot,
            "_fx_client_pids": " ".join(str(pid) for pid in client_pids),
        }
    )
    # The sections and focus.sh travel as single-quoted text, expanded when they run.
    return (
        "# shellcheck disable=SC2016\n"
        + preamble
        + shell_file("forensics.remote", "host_script.sh")
    )


ShellValue = str | int | Sequence[str] | None


def assignments(values: Mapping[str, ShellValue]) -> str:
    """The preamble that sets a shell file's inputs: one ``name='value'`` line each. A
    sequence becomes its items one per line (loop over it with ``while read``); None, empty.

    >>> print(assignments({"most": 8, "focus": None, "paths": ("/a b", "it's")}), end="")
    most='8'
    focus=''
    paths='/a b
    it'"'"'s'
    """
    lines = []
    for name, value in values.items():
        if value is None:
            text = ""
        elif isinstance(value, str | int):
            text = str(value)
        else:
            text = "\n".join(value)
        lines.append(f"{name}={shell_quote(text)}\n")
    return "".join(lines)


@cache
def shell_file(package: str, name: str) -> str:
    """The text of a ``.sh`` file shipped in ``package`` (package data)."""
    return resources.files(package).joinpath(name).read_text(encoding="utf-8")


def probe_shell(module: str, values: Mapping[str, ShellValue], *parts: str) -> str:
    """A probe's section shell: the preamble setting ``values``, then the ``.sh`` file
    beside the probe's module (``forensics.probes.cgroup`` runs ``cgroup.sh``); with PARTS,
    the files ``<name>.<part>.sh`` in turn instead (the part ``""`` is ``<name>.sh``), where
    a probe has more than one section or its sections share shell functions
    (``processes.again.sh``, ``processes.dump.sh``)."""
    package, _, name = module.rpartition(".")
    files = [f"{name}.{part}.sh" if part else f"{name}.sh" for part in parts or ("",)]
    return assignments(values) + "".join(shell_file(package, file) for file in files)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


@dataclass
class SectionOutput:
    """What came back for one section: the result for the manifest and the kept bytes."""

    result: SectionResult
    stdout: bytes
    stderr: bytes


@dataclass
class Decoded:
    outputs: dict[str, SectionOutput] = field(default_factory=dict)
    running: str | None = None
    fatal: str | None = None
    garbled: bool = False
    started: list[str] = field(default_factory=list)


def decode(script: Script, stream: bytes) -> Decoded:
    """Read the framed output back into one ``SectionOutput`` per section.

    Sections that never reported come back with ``finished=False``; a section that was
    running when the stream ended is named in ``running``. Every number in a frame is
    checked before it is used (a frame that fails a check ends the reading as
    ``garbled``), and every step moves strictly forward, so no stream can make this loop.
    """
    marker = ("\n" + script.nonce + " ").encode()
    specs = {s.name: s for s in script.sections}
    decoded = Decoded()
    position = 0
    while (start := stream.find(marker, position)) >= 0:
        line_end = stream.find(b"\n", start + len(marker), start + len(marker) + MAX_FRAME_LINE)
        if line_end < 0:
            decoded.garbled = len(stream) - start > len(marker) + MAX_FRAME_LINE
            break
        line = stream[start + len(marker) : line_end].decode("ascii", "replace")
        step = _read_frame(stream, line_end + 1, line, specs, script.nonce, decoded)
        if step is None or step <= position:  # not ours, or (never) no progress: stop
            decoded.garbled = True
            break
        position = step
    unsent = [name for name in decoded.started if name not in decoded.outputs]
    decoded.running = unsent[-1] if unsent else None
    for spec in script.sections:
        if spec.name not in decoded.outputs:
            decoded.outputs[spec.name] = SectionOutput(
                result=_unfinished(spec), stdout=b"", stderr=b""
            )
    return decoded


def _read_frame(
    stream: bytes,
    position: int,
    line: str,
    specs: dict[str, SectionSpec],
    nonce: str,
    decoded: Decoded,
) -> int | None:
    """Apply one frame whose header line ends before ``position``; return where the next
    frame may start, or None when the frame is not one the script writes."""
    kind, _, rest = line.partition(" ")
    if kind == "START" and rest in specs:
        if rest not in decoded.started:
            decoded.started.append(rest)
        return position
    if kind == "FATAL":
        decoded.fatal = rest[:FATAL_KEPT]
        return position
    header = _DATA.fullmatch(line)
    if header is None or header["name"] not in specs:
        return None
    outcome = _read_section(stream, position, specs[header["name"]], header, nonce)
    if outcome is None:
        return None
    output, position = outcome
    decoded.outputs[output.result.name] = output
    return position


def _read_section(
    stream: bytes, position: int, spec: SectionSpec, header: re.Match[str], nonce: str
) -> tuple[SectionOutput, int] | None:
    size = int(header["size"])
    exit_status = int(header["rc"])
    if exit_status > 255:
        return None
    kept = min(size, spec.max_bytes)
    stdout = stream[position : position + kept]
    if len(stdout) < kept:
        return None
    position += kept
    err_marker = f"\n{nonce} ERR ".encode()
    end_marker = f"\n{nonce} END {spec.name}\n".encode()
    stderr_lines: list[bytes] = []
    while stream.startswith(err_marker, position) and len(stderr_lines) < STDERR_LINES_KEPT:
        text_start = position + len(err_marker)
        line_end = stream.find(b"\n", text_start, text_start + STDERR_LINE_BYTES + 1)
        if line_end < 0:
            return None
        stderr_lines.append(stream[text_start:line_end])
        position = line_end
    if not stream.startswith(end_marker, position):
        return None
    position += len(end_marker)
    duration = _duration(header["t0"], header["t1"])
    mode = header["mode"]
    stderr = b"\n".join(stderr_lines) + (b"\n" if stderr_lines else b"")
    timed_out = exit_status in _TIMEOUT_STATUSES and (
        (exit_status == 124 and mode == "k")
        or duration is None
        or duration >= spec.timeout_s - 0.05
    )
    result = SectionResult(
        name=spec.name,
        command=spec.shell,
        exit_status=exit_status,
        duration_s=duration,
        bytes=kept,
        stderr_bytes=len(stderr),
        truncated=size > spec.max_bytes,
        timed_out=timed_out,
        timeout_enforced=mode in ("k", "t"),
        finished=True,
        sha256=hashlib.sha256(stdout).hexdigest(),
        stderr_sha256=hashlib.sha256(stderr).hexdigest() if stderr else None,
    )
    return SectionOutput(result=result, stdout=stdout, stderr=stderr), position


def _duration(t0_text: str, t1_text: str) -> float | None:
    t0, t1 = float(t0_text), float(t1_text)
    if t0 <= 0 or t1 < t0:
        return None
    return round(t1 - t0, 2)


def _unfinished(spec: SectionSpec) -> SectionResult:
    return SectionResult(
        name=spec.name,
        command=spec.shell,
        exit_status=None,
        duration_s=None,
        bytes=0,
        truncated=False,
        timed_out=False,
        finished=False,
    )
