"""Compose the one POSIX sh script that runs every section on the host, and read its output.

The host gets one script per run. Each section runs under its own timeout, its stdout goes
to a file in a private temp dir, and only then is it framed on the wire::

    \\n<nonce> START <name>\\n
    \\n<nonce> DATA <name> <rc> <t0> <t1> <size> <timeout-mode>\\n
    <exactly min(size, cap) bytes of stdout>
    \\n<nonce> ERR <one line of stderr>          (at most 20)
    \\n<nonce> END <name>\\n

The reader takes exactly the announced number of bytes, so no output of the host can forge
or split a boundary, whatever it prints; the per-run nonce keeps the reader from mistaking
host output for framing when it resynchronises. ``t0``/``t1`` are /proc/uptime readings
(read with the shell's builtin ``read``: no process) from which the duration follows.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

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

_PRELUDE = """\
LC_ALL=C; export LC_ALL
PATH="$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"; export PATH
umask 077
_fx_n=@NONCE@
_fx_d="${TMPDIR:-/tmp}/forensics.$$.$_fx_n"
if ! mkdir "$_fx_d" 2>/dev/null; then
  _fx_d="/dev/shm/forensics.$$.$_fx_n"
  mkdir "$_fx_d" 2>/dev/null || { printf '\\n%s FATAL no writable temp dir\\n' "$_fx_n"; exit 70; }
fi
trap 'cd /; rm -rf "$_fx_d"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM; trap '' PIPE
cd "$_fx_d" || exit 70
if timeout -k 1 5 true 2>/dev/null; then _fx_to=k
elif timeout -t 5 true 2>/dev/null; then _fx_to=t
else _fx_to=w
fi
_fx_sec() {
  printf '\\n%s START %s\\n' "$_fx_n" "$1"
  _fx_u0=0; read -r _fx_u0 _fx_x </proc/uptime 2>/dev/null
  case $_fx_to in
    k) timeout -k @KILL@ "$2" sh -c "$4" >o 2>e </dev/null ;;
    t) timeout -t "$2" sh -c "$4" >o 2>e </dev/null ;;
    *) sh -c "$4" >o 2>e </dev/null &
       _fx_p=$!
       ( sleep "$2"; kill -9 "$_fx_p" ) >/dev/null 2>&1 &
       _fx_w=$!
       wait "$_fx_p"; _fx_rc=$?
       kill "$_fx_w" 2>/dev/null
       ( exit "$_fx_rc" ) ;;
  esac
  _fx_rc=$?
  _fx_u1=0; read -r _fx_u1 _fx_x </proc/uptime 2>/dev/null
  _fx_s=$(wc -c <o); _fx_s=$((_fx_s + 0))
  printf '\\n%s DATA %s %s %s %s %s %s\\n' \
    "$_fx_n" "$1" "$_fx_rc" "$_fx_u0" "$_fx_u1" "$_fx_s" "$_fx_to"
  if [ "$_fx_s" -gt 0 ]; then head -c "$3" o; fi
  _fx_i=0
  while [ "$_fx_i" -lt @ERRLINES@ ] && IFS= read -r _fx_l || [ -n "$_fx_l" ]; do
    printf '\\n%s ERR %.@ERRBYTES@s' "$_fx_n" "$_fx_l"
    _fx_i=$((_fx_i + 1)); _fx_l=
  done <e
  printf '\\n%s END %s\\n' "$_fx_n" "$1"
}
"""


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


def compose(sections: Sequence[SectionSpec], nonce: str | None = None) -> Script:
    """One script for all sections, in the order given (callers put cheap ones first)."""
    nonce = nonce or secrets.token_hex(16)
    names = [s.name for s in sections]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate section names: {names}")
    prelude = (
        _PRELUDE.replace("@NONCE@", nonce)
        .replace("@KILL@", str(TIMEOUT_KILL_GRACE_S))
        .replace("@ERRLINES@", str(STDERR_LINES_KEPT))
        .replace("@ERRBYTES@", str(STDERR_LINE_BYTES))
    )
    calls = [
        f"_fx_sec {s.name} {_seconds(s.timeout_s)} {s.max_bytes} {shell_quote(s.shell)}"
        for s in sections
    ]
    text = prelude + "\n".join(calls) + "\n"
    return Script(text=text, nonce=nonce, sections=tuple(sections))


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
        decoded.running = rest
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
    decoded.running = None
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
