"""Redaction runs on every script line a probe keeps: it must stay linear on long words."""

from __future__ import annotations

import time

from forensics.core.redaction import redact


def test_a_long_script_line_is_redacted_in_linear_time() -> None:
    line = "z" * 200_000 + " --api-key=s3cret " + "a.b-" * 50_000 + " https://u:pw@host/"
    started = time.monotonic()
    redacted = redact(line)
    assert time.monotonic() - started < 2.0
    assert "--api-key=[REDACTED]" in redacted and "https://u:[REDACTED]@host/" in redacted
    assert "s3cret" not in redacted and "pw@" not in redacted
