"""A hostile host writes whatever frames it likes: the decoder checks every number it reads,
always moves forward, and never keeps more than each section's cap."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.core.models import SectionSpec
from forensics.remote.host_script import STDERR_LINES_KEPT, compose, decode
from tests.hostile.bounds import within

NONCE = "5" * 32
SECTIONS = [
    SectionSpec(name="cgroup", shell="true", max_bytes=64),
    SectionSpec(name="memory", shell="true", max_bytes=1 << 20),
]
SCRIPT = compose(SECTIONS, nonce=NONCE)


def frame(*words: str, body: bytes = b"", end: str | None = None) -> bytes:
    """One frame as the host would write it: header, body, and the END line."""
    header = f"\n{NONCE} {' '.join(words)}\n".encode()
    closing = f"\n{NONCE} END {end}\n".encode() if end else b""
    return header + body + closing


def test_a_negative_size_is_garbled_not_an_endless_loop() -> None:
    # The size points back at an END line before the header: read naively, the frame ends
    # where it began, and the reader would take it again, forever.
    first = frame("DATA", "cgroup", "0", "1.0", "1.5", "0", "k", end="cgroup")
    back = len(f"\n{NONCE} END cgroup\n") + len(frame("DATA", "cgroup", "0", "1", "1", "-99", "k"))
    stream = first + frame("DATA", "cgroup", "0", "1", "1", f"-{back}", "k")
    with within(2):
        decoded = decode(SCRIPT, stream)
    assert decoded.garbled
    assert decoded.outputs["cgroup"].stdout == b""


def test_a_huge_size_keeps_at_most_the_cap_and_waits_for_the_bytes() -> None:
    body = b"y" * 64
    stream = frame("DATA", "cgroup", "0", "1.0", "1.5", "9" * 18, "k", body=body, end="cgroup")
    with within(2):
        decoded = decode(SCRIPT, stream)
    cgroup = decoded.outputs["cgroup"]
    assert cgroup.result.finished and cgroup.result.truncated
    assert cgroup.stdout == body and cgroup.result.bytes == 64


def test_a_forged_fatal_frame_is_kept_short() -> None:
    decoded = decode(SCRIPT, frame("FATAL", "\x1b]52;c;" + "A" * 100 + "\x07"))
    assert decoded.fatal is not None and len(decoded.fatal) <= 200


def test_more_stderr_lines_than_the_script_writes_is_garbled() -> None:
    errors = b"".join(f"\n{NONCE} ERR e{n}".encode() for n in range(STDERR_LINES_KEPT + 1))
    stream = frame("DATA", "cgroup", "1", "1.0", "1.5", "0", "k", body=errors, end="cgroup")
    assert decode(SCRIPT, stream).garbled


NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["", "-0", "+5", "1_000", "1e9", "nan", "inf", "-inf", "0x10", "٣", "-K"]),
    st.text(alphabet="0123456789.-+eE_ x\x00\x1b", max_size=24),
)
NAMES = st.sampled_from(["cgroup", "memory", "unknown", "", "../x", "cgroup memory"])


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["START", "DATA", "ERR", "END", "FATAL", "OTHER"]))
    if kind == "DATA":
        words = ["DATA", draw(NAMES), *(draw(NUMBERS) for _ in range(4)), draw(NUMBERS)]
        words.append(draw(st.sampled_from(["k", "t", "w", "x", ""])))
        words = words[: draw(st.integers(min_value=1, max_value=len(words)))] + (
            [] if draw(st.booleans()) else words[draw(st.integers(1, 7)) :]
        )
        return frame(*words, body=draw(st.binary(max_size=100)))
    return frame(kind, draw(NAMES), body=draw(st.binary(max_size=40)))


@settings(
    max_examples=300,
    deadline=timedelta(milliseconds=500),
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(st.one_of(frames(), st.binary(max_size=64)), max_size=12))
def test_any_stream_of_frames_decodes_promptly_within_the_caps(parts: list[bytes]) -> None:
    stream = b"".join(parts)
    with within(2):
        decoded = decode(SCRIPT, stream)
    for spec in SECTIONS:
        output = decoded.outputs[spec.name]
        assert len(output.stdout) <= spec.max_bytes
        assert output.result.bytes == len(output.stdout)
        assert output.stderr.count(b"\n") <= STDERR_LINES_KEPT
        if output.result.finished:
            assert output.result.exit_status is not None and 0 <= output.result.exit_status <= 255
            assert output.result.duration_s is None or output.result.duration_s >= 0
