"""Read pressure stall information (PSI): ``/proc/pressure/memory`` or a v2 ``memory.pressure``.

Both files share one format (kernel ``Documentation/accounting/psi.rst``)::

    some avg10=0.00 avg60=0.00 avg300=0.00 total=1279
    full avg10=0.00 avg60=0.00 avg300=0.00 total=1086

``avgN`` are percentages of wall time over 10/60/300 s windows in which some (or all
non-idle) tasks stalled waiting for memory; ``total`` is cumulative stall time in
microseconds. Old kernels wrote no ``full`` line for cpu; a line that does not parse is
left out, never guessed.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class StallLine(BaseModel):
    avg10: float = Field(description="% of the last 10 s.")
    avg60: float
    avg300: float
    total_us: int = Field(description="Cumulative stall time, microseconds.")
    line_index: int = Field(description="0-based line of the file it came from.")


class Pressure(BaseModel):
    some: StallLine | None = None
    full: StallLine | None = None


def parse_pressure(text: str) -> Pressure | None:
    """Parse one PSI file; None when neither line is readable.

    >>> p = parse_pressure(
    ...     "some avg10=31.50 avg60=12.02 avg300=3.10 total=98811234\\n"
    ...     "full avg10=8.25 avg60=2.00 avg300=0.51 total=21000000\\n"
    ... )
    >>> p.some.avg10, p.full.avg10, p.full.total_us, p.full.line_index
    (31.5, 8.25, 21000000, 1)
    >>> parse_pressure("cat: /proc/pressure/memory: Operation not supported") is None
    True
    """
    pressure = Pressure()
    for index, line in enumerate(text.splitlines()):
        kind, _, rest = line.strip().partition(" ")
        if kind not in ("some", "full"):
            continue
        stall = _stall_line(rest, index)
        if stall is not None:
            setattr(pressure, kind, stall)
    return pressure if pressure.some or pressure.full else None


def _stall_line(rest: str, index: int) -> StallLine | None:
    values: dict[str, str] = {}
    for word in rest.split():
        key, sep, value = word.partition("=")
        if sep:
            values[key] = value
    try:
        return StallLine(
            avg10=_percent(values["avg10"]),
            avg60=_percent(values["avg60"]),
            avg300=_percent(values["avg300"]),
            total_us=int(values["total"]),
            line_index=index,
        )
    except (KeyError, ValueError):
        return None


def _percent(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 100:
        raise ValueError(f"not a percentage: {text}")
    return value
