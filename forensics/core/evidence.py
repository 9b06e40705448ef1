"""Evidence from line numbers: the one way findings and facts cite the raw output."""

from __future__ import annotations

from forensics.core.models import EvidenceRef


def cite(section: str, first_line: int, excerpt: str, last_line: int | None = None) -> EvidenceRef:
    """Lines ``first_line`` to ``last_line`` (1-based; one line when no last) of ``section``.

    >>> cite("memory", 4, "Mlocked: 419430400 kB")
    EvidenceRef(section='memory', first_line=4, last_line=4, excerpt='Mlocked: 419430400 kB')
    >>> cite("processes", 12, "900 (cuzk) Z 1 ...", last_line=13).last_line
    13
    """
    return EvidenceRef(
        section=section,
        first_line=first_line,
        last_line=first_line if last_line is None else last_line,
        excerpt=excerpt,
    )
