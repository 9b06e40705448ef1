"""A host whose tools print what no parser expects (here: superscript digits, which
``str.isdigit`` accepts and ``int`` refuses) costs that probe its facts, said as a
finding, never the whole collection (before: an internal error, exit 70)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from forensics.core.probe import Captured
from forensics.judge.analysis import analyze
from forensics.remote import bundle


def test_digits_no_parser_can_read_cost_only_their_probe(tmp_path: Path) -> None:
    collected = subprocess.run(
        [
            sys.executable, "-m", "forensics", "collect", "local", "--out", str(tmp_path),
            "-f", "json", "--fail-on", "never", "--snapshot-gap", "0.2",
        ],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    manifest, captures = bundle.load(Path(json.loads(collected.stdout)["bundle"]))
    hostile = {
        name: Captured(
            result=capture.result,
            text=re.sub(r"[0-9]+", lambda number: number.group(0) + "\u00b2", capture.text),
            stderr=capture.stderr,
        )
        for name, capture in captures.items()
    }
    report = analyze(manifest, hostile, bundle=None)
    unreadable = [f for f in report.findings if f.id == "collection.section_unreadable"]
    assert unreadable, "no parser refused superscript digits: the test no longer tests"
    for finding in unreadable:
        assert finding.subject["probe"] and "Error" in finding.subject["error"]
        assert finding.evidence and finding.evidence[0].section in captures
