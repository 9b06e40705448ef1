"""Property: a secret of any kind the issue lists, inside a command line, an environment, a
JSON document, a log line or a URL, does not survive packing; redaction is idempotent; the
pack verifies."""

from __future__ import annotations

import json
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.core.redaction import redact_counted
from forensics.evidence.pack import pack
from forensics.evidence.verify import verify
from forensics.remote.bundle import RUN_STDERR
from tests.secret_bundle import collect_with_secrets

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
B64URL = ALNUM + "-_"


def chars(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=low, max_size=high)


# A fixed start keeps a shrunk value ("0000000000") from matching what the bundle holds anyway.
value = chars(ALNUM, 8, 37).map(lambda tail: f"Qz9{tail}")
secret_name = st.sampled_from(
    ["API_KEY", "api-key", "token", "PASSWORD", "db_password", "client_secret", "auth_token"]
)


@st.composite
def secrets(draw: st.DrawFn) -> tuple[str, list[str]]:
    """(text holding the secret in its usual form, the secret parts that must not survive)."""
    kind = draw(st.integers(0, 13))
    v = draw(value)
    if kind == 0:
        return f"--{draw(st.sampled_from(['token', 'api-key', 'password']))}={v}", [v]
    if kind == 1:
        return f"--{draw(st.sampled_from(['token', 'api-key', 'secret']))} {v}", [v]
    if kind == 2:
        return f"Authorization: Bearer {v}", [v]
    if kind == 3:
        return f"AWS_SECRET_ACCESS_KEY={v}", [v]
    if kind == 4:
        key = "AKIA" + draw(chars(UPPER, 16, 16))
        return key, [key]
    if kind == 5:
        token = "ghp_" + draw(chars(ALNUM, 36, 36))
        return token, [token]
    if kind == 6:
        token = "github_pat_" + draw(chars(ALNUM, 22, 22)) + "_" + draw(chars(ALNUM, 59, 59))
        return token, [token]
    if kind == 7:
        token = "glpat-" + draw(chars(B64URL, 20, 26))
        return token, [token]
    if kind == 8:
        letter = draw(st.sampled_from("abpre"))
        token = f"xox{letter}-" + draw(chars(UPPER + "-", 10, 40))
        return token, [token]
    if kind == 9:
        parts = [draw(chars(B64URL, 8, 40)) for _ in range(3)]
        token = f"eyJ{parts[0]}.eyJ{parts[1]}.{parts[2]}"
        return token, [token]
    if kind == 10:
        scheme = draw(st.sampled_from(["postgres", "mysql", "redis", "https", "mongodb+srv"]))
        return f"{scheme}://svc:{v}@db.internal:5432/x", [v]
    if kind == 11:
        lines = [
            "MIIQz9" + draw(chars(ALNUM + "+/", 16, 58)) for _ in range(draw(st.integers(1, 4)))
        ]
        kind_word = draw(st.sampled_from(["RSA ", "EC ", "OPENSSH ", ""]))
        block = "\n".join(
            [
                f"-----BEGIN {kind_word}PRIVATE KEY-----",
                *lines,
                f"-----END {kind_word}PRIVATE KEY-----",
            ]
        )
        return block, lines
    if kind == 12:
        name = draw(st.sampled_from(["api_key", "password", "secret", "access_token", "apiKey"]))
        return json.dumps({name: v, "region": "eu"}), [v]
    return f"{draw(secret_name)}={v}", [v]


@st.composite
def contexts(draw: st.DrawFn) -> tuple[str, list[str]]:
    """The secret inside a command line (NUL-separated, as /proc/PID/cmdline), environment
    lines, a JSON document, a log line or a plain line."""
    text, hidden = draw(secrets())
    where = draw(st.integers(0, 4))
    if where == 0:  # a flag and its value are two arguments; anything else is one
        flag = text.startswith("--") and not text.startswith("---")
        arguments = text.split(" ") if flag else [text]
        return "\x00".join(["/usr/bin/worker", *arguments, "--port", "9000"]), hidden
    if where == 1:
        return f"HOME=/root\n{text}\nLANG=C.UTF-8", hidden
    if where == 2:
        return json.dumps({"command": f"worker {text}", "pid": 7}), hidden
    if where == 3:
        return f"2026-11-29T20:15:03Z INFO connecting with {text} (attempt 1)", hidden
    return text, hidden


@given(st.lists(contexts(), min_size=1, max_size=4))
@settings(max_examples=300, deadline=None)
def test_redaction_leaves_no_secret_and_a_second_pass_changes_nothing(
    cases: list[tuple[str, list[str]]],
) -> None:
    # /proc/PID/cmdline separates arguments with NUL; the core redaction reads command
    # lines as ps shows them (the pack maps NUL for it, tested below).
    text = "\n".join(case.replace("\x00", " ") for case, _ in cases)
    redacted, counts = redact_counted(text)
    for _, hidden in cases:
        for part in hidden:
            assert part not in redacted, (part, redacted)
    assert sum(counts.values()) >= len(cases)
    again, counted_again = redact_counted(redacted)
    assert again == redacted and not counted_again


@pytest.fixture(scope="module")
def real_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return collect_with_secrets(tmp_path_factory.mktemp("property-bundle"))


@pytest.fixture
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("property-packs")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@given(st.lists(contexts(), min_size=1, max_size=6))
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_no_generated_secret_survives_packing_and_the_pack_verifies(
    real_bundle: Path, scratch: Path, cases: list[tuple[str, list[str]]]
) -> None:
    bundle = scratch / real_bundle.name
    shutil.rmtree(bundle, ignore_errors=True)
    shutil.copytree(real_bundle, bundle)
    # The login shell's own stderr is kept raw, unhashed by the manifest: a realistic place
    # for any text at all to land.
    (bundle / "raw" / RUN_STDERR).write_bytes("\n".join(c for c, _ in cases).encode())
    archive = scratch / "pack.tar.gz"
    packed = pack(bundle, archive)
    with tarfile.open(archive, "r:gz") as tar:
        contents = [
            tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        ]
    for _, hidden in cases:
        for part in hidden:
            assert all(part.encode() not in data for data in contents), part
    stderr = next(f for f in packed.manifest.files if f.path == f"raw/{RUN_STDERR}")
    assert sum(stderr.redacted.values()) >= len(cases)
    assert verify(archive).ok
