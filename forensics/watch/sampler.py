"""Sample a host's memory at an interval, for ``forensics watch`` and ``forensics wait``.

One POSIX sh loop runs on the host for the whole watch and prints one framed line per
interval (builtins read the files; the only process per sample is ``sleep``)::

    <nonce> CG 2 /sys/fs/cgroup
    <nonce> S 8400.12 1584842752 41943040 419430400 419430400 366145961984 367219703808
    <nonce> S 8402.13 1584842752 52428800 408944640 408944640 355408543744 367219703808

``CG`` names the cgroup sampled (version 0 and ``-`` when none is visible); each ``S``
carries the host's /proc/uptime, MemTotal, MemAvailable, Mlocked, Unevictable (kB), the
cgroup's current usage and its limit (bytes, ``max`` or ``-``). Rates are computed from
the host's own clock, so network jitter does not bend them. The loop ends by itself after
``count`` samples, or at its next write once the connection is gone.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from forensics.core.cgroup_paths import UNLIMITED_AT
from forensics.core.numbers import parse_float, parse_int
from forensics.remote.host_script import shell_quote

_LOOP = """\
LC_ALL=C; export LC_ALL
PATH="$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"; export PATH
_n=@NONCE@; _every=@EVERY@; _left=@COUNT@; _cg=@CGROUP@
if [ -z "$_cg" ]; then
  _v1=; _v2=
  if [ -r /proc/1/cgroup ]; then
    while IFS=: read -r _ c p; do
      case ",$c," in *,memory,*) _v1=${p%/} ;; ,,) _v2=${p%/} ;; esac
    done </proc/1/cgroup
  fi
  for _d in "/sys/fs/cgroup$_v2" /sys/fs/cgroup "/sys/fs/cgroup/memory$_v1" /sys/fs/cgroup/memory
  do
    if [ -r "$_d/memory.current" ] || [ -r "$_d/memory.usage_in_bytes" ]; then _cg=$_d; break; fi
  done
fi
_cur=; _max=; _ver=0
if [ -r "$_cg/memory.current" ]; then _cur=$_cg/memory.current; _max=$_cg/memory.max; _ver=2
elif [ -r "$_cg/memory.usage_in_bytes" ]; then
  _cur=$_cg/memory.usage_in_bytes; _max=$_cg/memory.limit_in_bytes; _ver=1
fi
printf '%s CG %s %s\\n' "$_n" "$_ver" "${_cg:--}" || exit 0
while :; do
  _up=-; read -r _up _x </proc/uptime
  _t=-; _a=-; _m=-; _u=-
  while read -r _k _v _x; do
    case $_k in
      MemTotal:) _t=$_v ;; MemAvailable:) _a=$_v ;; Mlocked:) _m=$_v ;; Unevictable:) _u=$_v ;;
    esac
  done </proc/meminfo
  _c=-; _l=-
  if [ -n "$_cur" ] && [ -r "$_cur" ]; then
    read -r _c <"$_cur"
    if [ -r "$_max" ]; then read -r _l <"$_max"; fi
  fi
  printf '%s S %s %s %s %s %s %s %s\\n' "$_n" "$_up" "$_t" "$_a" "$_m" "$_u" "$_c" "$_l" || exit 0
  if [ "$_left" -gt 0 ]; then
    _left=$((_left - 1))
    if [ "$_left" -eq 0 ]; then exit 0; fi
  fi
  sleep "$_every" || exit 0
done
"""


def sampler_script(nonce: str, every_s: float, count: int | None, cgroup: str | None) -> str:
    """The loop for the host: ``count`` samples (None: until the connection goes), one
    every ``every_s`` seconds, of ``cgroup`` (a directory) or of PID 1's memory cgroup."""
    return (
        _LOOP.replace("@NONCE@", nonce)
        .replace("@EVERY@", f"{every_s:.3f}".rstrip("0").rstrip("."))
        .replace("@COUNT@", str(count if count is not None else -1))
        .replace("@CGROUP@", shell_quote(cgroup) if cgroup else "''")
    )


class SampledCgroup(BaseModel):
    version: int = Field(description="1 or 2; 0 when no memory cgroup is visible.")
    path: str | None


class MemorySample(BaseModel):
    """One sample; the ``*_rate_*`` fields are filled in by whoever keeps the history."""

    time: datetime = Field(description="When it arrived here, UTC.")
    host_uptime_s: float
    mem_total_bytes: int | None
    mem_available_bytes: int | None
    mem_used_bytes: int | None = Field(description="MemTotal minus MemAvailable.")
    mlocked_bytes: int | None
    unevictable_bytes: int | None
    cgroup_current_bytes: int | None
    cgroup_limit_bytes: int | None = Field(description="None when unlimited or not visible.")
    cgroup: str | None = Field(default=None, description="The cgroup directory sampled.")
    used_rate_bytes_per_s: float | None = None
    cgroup_rate_bytes_per_s: float | None = None


def read_line(nonce: str, line: str, received: datetime) -> MemorySample | SampledCgroup | None:
    """One line of the loop's output; None for anything that is not a well-formed frame.

    >>> from datetime import UTC
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> read_line("n0", "n0 CG 1 /sys/fs/cgroup/memory/job", now)
    SampledCgroup(version=1, path='/sys/fs/cgroup/memory/job')
    >>> s = read_line("n0", "n0 S 8400.12 1000 400 20 30 104857600 9223372036854771712", now)
    >>> s.mem_used_bytes, s.mlocked_bytes, s.cgroup_current_bytes, s.cgroup_limit_bytes
    (614400, 20480, 104857600, None)
    >>> read_line("n0", "n0 S 8400.12 - - - - - -", now).mem_available_bytes is None
    True
    >>> read_line("n0", "n1 S 8400.12 1000 400 20 30 1 2", now) is None
    True
    """
    words = line.rstrip("\r\n").split(" ")
    if len(words) < 2 or words[0] != nonce:
        return None
    if words[1] == "CG" and len(words) >= 4 and words[2] in ("0", "1", "2"):
        path = " ".join(words[3:])
        return SampledCgroup(version=int(words[2]), path=None if path == "-" else path)
    if words[1] != "S" or len(words) != 9:
        return None
    uptime = parse_float(words[2], minimum=0)
    if uptime is None:
        return None
    total, available, mlocked, unevictable = (_kilobytes(word) for word in words[3:7])
    limit = parse_int(words[8], minimum=0)
    return MemorySample(
        time=received,
        host_uptime_s=uptime,
        mem_total_bytes=total,
        mem_available_bytes=available,
        mem_used_bytes=total - available if total is not None and available is not None else None,
        mlocked_bytes=mlocked,
        unevictable_bytes=unevictable,
        cgroup_current_bytes=parse_int(words[7], minimum=0),
        cgroup_limit_bytes=limit if limit is not None and limit < UNLIMITED_AT else None,
    )


def _kilobytes(text: str) -> int | None:
    value = parse_int(text, minimum=0)
    return None if value is None else value * 1024
