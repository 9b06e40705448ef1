"""Precision and recall of the masking rules over the test corpus, for this checkout or for
another checkout of the package (to compare before and after a change of the rules).

    PYTHONPATH=$PWD python3 bench/masking_corpus.py            # this checkout
    PYTHONPATH=/path/to/old/checkout python3 bench/masking_corpus.py

Counts places as (file, line, pattern) against tests/samples/scripts/corpus/expected.toml.
"""

from __future__ import annotations

import inspect
import tomllib
from pathlib import Path

from forensics.shell.masking import find_masking

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "samples" / "scripts" / "corpus"


def main() -> None:
    expected_all = tomllib.loads((CORPUS / "expected.toml").read_text())
    follows_sources = "read_source" in inspect.signature(find_masking).parameters
    true_positive = false_positive = false_negative = 0
    for name, expected in sorted(expected_all.items()):
        script = CORPUS / f"{name}.sh"
        kwargs = {}
        if follows_sources:
            kwargs["read_source"] = lambda sourced, d=script.parent: (
                (d / sourced).read_text() if (d / sourced).is_file() else None
            )
        analysis = find_masking(script.read_text(), **kwargs)
        found = {(getattr(i, "file", None) or "", i.line, i.pattern) for i in analysis.issues}
        wanted = set()
        for place in expected.get("flagged", []):
            line, pattern, *file = place
            wanted.add((file[0] if file else "", line, pattern))
        true_positive += len(found & wanted)
        false_positive += len(found - wanted)
        false_negative += len(wanted - found)
    precision = true_positive / ((true_positive + false_positive) or 1)
    recall = true_positive / ((true_positive + false_negative) or 1)
    print(
        f"{len(expected_all)} scripts: {true_positive} found, {false_positive} false, "
        f"{false_negative} missed; precision {precision:.1%}, recall {recall:.1%}"
    )


if __name__ == "__main__":
    main()
