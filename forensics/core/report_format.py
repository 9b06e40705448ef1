"""The report formats the commands print. Apart from the renderers (``forensics.reports``,
which loads Jinja2) so that ``--help`` can list the choices without loading them."""

from __future__ import annotations

import enum


class Format(enum.StrEnum):
    text = "text"
    json = "json"
    md = "md"
    html = "html"
