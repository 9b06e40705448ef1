"""focus_pids: find the focus process on the host without finding ourselves.

A shell fragment for the probes that look at the process in question (``logs``: the files
it writes; ``disk``: its working directory). It matches ``--focus`` as an extended regular
expression (``grep -E``) against ``/proc/PID/comm`` and each argument of
``/proc/PID/cmdline``, and prints one line per process found, with its raw stat line::

    focus-pid 4242 4242 (cuzk) S 4200 4242 4242 0 -1 4194560 ... 8400 ...
    focus-capped 11

Two traps are avoided. The regex never appears in any command line of ours: it reaches
``grep -f`` through a file written with ``printf '%b'`` from octal escapes, so neither the
section's ``sh -c`` nor ``grep`` matches itself. And the script's own ancestors (``timeout``,
the script's ``sh``, and in ``collect local`` the ``forensics`` command line, which holds the
regex verbatim) are walked up from ``$$`` and skipped.

After the fragment, ``$_fp`` holds the pids found (at most ``MAX_PIDS``), space separated.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field

MAX_PIDS = 8

_FRAGMENT = """\
_fp=; _fc=0
printf '%b' @REGEX@ >focus.re
_fa=' '; _p=$$
while [ -n "$_p" ] && [ "$_p" -gt 1 ] 2>/dev/null; do
  _fa="$_fa$_p "
  _l=; read -r _l </proc/"$_p"/stat 2>/dev/null || break
  set -- ${_l##*) }
  _p=$2
done
for _f in $(grep -l -s -a -E -f focus.re /proc/[0-9]*/comm /proc/[0-9]*/cmdline 2>focus.err); do
  _p=${_f#/proc/}; _p=${_p%%/*}
  case "$_fa" in *" $_p "*) continue ;; esac
  case " $_fp " in *" $_p "*) continue ;; esac
  _l=; read -r _l </proc/"$_p"/stat 2>/dev/null || continue
  _fc=$((_fc + 1))
  if [ "$_fc" -le @MAX@ ]; then _fp="$_fp $_p"; printf 'focus-pid %s %s\\n' "$_p" "$_l"; fi
done
if [ "$_fc" -gt @MAX@ ]; then printf 'focus-capped %s\\n' "$_fc"; fi
if [ -s focus.err ]; then _l=; read -r _l <focus.err; printf 'focus-error %s\\n' "$_l"; fi
"""


def focus_pids_shell(focus: str) -> str:
    """The fragment for ``focus``, its regex encoded as octal escapes.

    >>> shell = focus_pids_shell("cuzk")
    >>> "cuzk" in shell, "'\\\\0143\\\\0165\\\\0172\\\\0153'" in shell
    (False, True)
    """
    encoded = "".join(f"\\0{byte:03o}" for byte in focus.encode())
    return _FRAGMENT.replace("@REGEX@", "'" + encoded + "'").replace("@MAX@", str(MAX_PIDS))


class FocusProcess(BaseModel):
    """One process that matched ``--focus``, as its stat line showed it."""

    pid: int
    name: str | None = None
    state: str | None = Field(default=None, description="R, S, D, Z, ... as in /proc/PID/stat.")
    started: datetime | None = Field(default=None, description="UTC; from starttime and btime.")
    raw_line: int = Field(description="Line of the focus-pid record in its section.")

    @property
    def alive(self) -> bool:
        """Running or sleeping: not a zombie and not dead."""
        return self.state not in ("Z", "X", "x")


def parse_focus_line(
    line: str, raw_line: int, boot_time: datetime | None, clock_ticks: int
) -> FocusProcess | None:
    """Read a ``focus-pid PID STAT`` line; None when it is not one.

    The process name sits between the first ``(`` and the *last* ``)``: names may hold
    spaces and parentheses.

    >>> from datetime import UTC
    >>> boot = datetime(2025, 11, 29, 18, 40, tzinfo=UTC)
    >>> stat = "4242 (cuzk) d) Z 1 4242 4242 0 -1 4194564 9 0 0 0 5 1 0 0 20 0 1 0 840000 0"
    >>> p = parse_focus_line("focus-pid 4242 " + stat, 7, boot, 100)
    >>> p.pid, p.name, p.state, p.started.isoformat(), p.alive
    (4242, 'cuzk) d', 'Z', '2025-11-29T21:00:00+00:00', False)
    >>> parse_focus_line("focus-pid x", 1, None, 100) is None
    True
    >>> parse_focus_line("focus-pid 1 " + stat.replace("840000", "9" * 20), 7, boot, 100).started

    """
    words = line.split(" ", 2)
    if len(words) < 3 or words[0] != "focus-pid" or not words[1].isdigit():
        return None
    stat = words[2]
    process = FocusProcess(pid=int(words[1]), raw_line=raw_line)
    if "(" in stat and ")" in stat:
        process.name = stat[stat.index("(") + 1 : stat.rindex(")")]
        rest = stat[stat.rindex(")") + 1 :].split()
        if rest:
            process.state = rest[0][:1]
        # starttime is field 22 of the stat line, the 20th after the name.
        if len(rest) >= 20 and rest[19].isdigit() and boot_time is not None and clock_ticks > 0:
            process.started = _after_boot(boot_time, int(rest[19]) / clock_ticks)
    return process


def _after_boot(boot_time: datetime, seconds: float) -> datetime | None:
    try:
        return boot_time + timedelta(seconds=seconds)
    except OverflowError:
        return None
