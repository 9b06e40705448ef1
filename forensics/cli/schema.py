"""``forensics schema``: the JSON Schema of the report that ``collect --format json`` prints."""

from __future__ import annotations

import json
import sys


def schema_command() -> None:
    """Print the JSON Schema of the report that `collect --format json` prints."""
    from forensics.judge.host_report import HostReport

    sys.stdout.write(json.dumps(HostReport.model_json_schema(), indent=2) + "\n")
