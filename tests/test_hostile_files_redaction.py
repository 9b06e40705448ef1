"""Secrets never leave redacted: every form, in every container a host can put it in.

Property-based: hypothesis draws a secret value and puts it, in one of the forms below,
inside a command line (argv), an environment block, a JSON or YAML document, a URL or a
log line; the secret must not survive ``redact`` (or ``redact_argv``), redaction must be
idempotent, and ``redact_counted`` must count what it removed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.core.redaction import REDACTED, redact, redact_argv, redact_counted
from tests.conftest import run_cli

# A secret: letters and digits, at least one digit and one capital (the shape of a real
# token; the bare `token VALUE` rule keeps prose words), long enough to be unique.
SECRET = st.builds(
    lambda core, digit, capital: f"{capital}{core}{digit}",
    st.text(st.sampled_from("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"),
            min_size=10, max_size=30),
    st.sampled_from("0123456789"),
    st.sampled_from("ABCDEFGHJKLMNPQRSTUVWXYZ"),
)  # fmt: skip

# Each form puts the secret into one piece of text, the way a program writes it.
FORMS: dict[str, Callable[[str], str]] = {
    "json_api_key": lambda s: json.dumps({"api_key": s}),
    "python_dict_password": lambda s: repr({"password": s}),
    "mysql_p": lambda s: f"mysql -uroot -p{s} shop",
    "authorization_basic": lambda s: f"Authorization: Basic {s}==",
    "authorization_bearer": lambda s: f"Authorization: Bearer {s}",
    "redis_url": lambda s: f"redis://:{s}@cache:6379/0",
    "postgres_url": lambda s: f"postgres://app:{s}@db.internal:5432/app",
    "token_word": lambda s: f"token {s}",
    "flag_equals": lambda s: f"--token={s}",
    "flag_space": lambda s: f"--api-key {s}",
    "env": lambda s: f"AWS_SECRET_ACCESS_KEY={s}",
    "api_key_log": lambda s: f"api_key={s}",
    "password_log": lambda s: f"password={s}",
    "yaml_password": lambda s: f"password: {s}",
    "github": lambda s: f"ghp_{s}{s}"[:40],
    "github_pat": lambda s: f"github_pat_{s}{s}",
    "gitlab": lambda s: f"glpat-{s}{s}"[:26],
    "slack": lambda s: f"xoxb-{s}-{s}",
    "slack_refresh": lambda s: f"xoxe-{s}",
    "pgp": lambda s: (
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF{s}\n=ab12\n"
        "-----END PGP PRIVATE KEY BLOCK-----"
    ),
    "jwt": lambda s: f"eyJhbGciOiJIUzI1NiJ9.eyJ{s}.{s}",
    "pem": lambda s: (
        f"-----BEGIN RSA PRIVATE KEY-----\nMIIEow{s}\n{s}AQAB\n-----END RSA PRIVATE KEY-----"
    ),
}
# Where the value is only part of the token, the part that must disappear.
KEPT_SHAPE = {"github", "gitlab"}


def _hidden(form: str, secret: str) -> str:
    text = FORMS[form](secret)
    if form in KEPT_SHAPE:
        return text.split("_", 1)[-1].split("-", 1)[-1]
    return secret


CONTAINERS: dict[str, Callable[[str], str]] = {
    "argv": lambda text: f"/usr/bin/worker --verbose {text} --port 9000",
    "environment": lambda text: f"HOME=/root\nPATH=/usr/bin\n{text}\nLANG=C.UTF-8",
    "json": lambda text: json.dumps({"cmdline": text, "pid": 4242}),
    "yaml": lambda text: yaml.safe_dump({"service": {"command": text, "restart": "always"}}),
    "url": lambda text: f"https://example.invalid/hook?note={text}&x=1",
    "log": lambda text: f"2026-11-29T20:15:03Z ERROR worker[4242]: request failed: {text}",
}


@settings(max_examples=600, deadline=None)
@given(
    form=st.sampled_from(sorted(FORMS)),
    container=st.sampled_from(sorted(CONTAINERS)),
    secret=SECRET,
)
def test_every_form_in_every_container_is_redacted(form: str, container: str, secret: str) -> None:
    text = CONTAINERS[container](FORMS[form](secret))
    redacted, counts = redact_counted(text)
    hidden = _hidden(form, secret)
    assert hidden not in redacted, (form, container, redacted)
    assert REDACTED in redacted and sum(counts.values()) >= 1
    assert redact(redacted) == redacted
    assert redact_counted(redacted)[1] == {}


@settings(max_examples=300, deadline=None)
@given(form=st.sampled_from(sorted(FORMS)), secret=SECRET)
def test_every_form_split_into_arguments_is_redacted(form: str, secret: str) -> None:
    """The same forms as a process's argv (NUL-separated on the host, a list here)."""
    text = FORMS[form](secret)
    words = text.split(" ") if form not in ("pem", "pgp") else [text]
    argv = words if form == "mysql_p" else ["/usr/bin/worker", *words]
    redacted = redact_argv(argv)
    assert _hidden(form, secret) not in " ".join(redacted), (form, redacted)
    assert redact_argv(redacted) == redacted


def test_prose_about_passwords_and_tokens_is_kept() -> None:
    for line in (
        "FATAL: password authentication failed for user postgres",
        "the token expired; run login again",
        "mkdir -p /var/lib/app && ssh -p22 host",
        "basic setup complete",
    ):
        assert redact(line) == line


def test_counts_name_each_kind() -> None:
    text = (
        'curl -H "Authorization: Basic dXNlcjpwYXNz" https://u:pw1@h/ '
        "--token=abc ghp_0123456789abcdefghijKLMNOPQRSTUVWXYZ"
    )
    _, counts = redact_counted(text)
    assert counts == {"authorization": 1, "url_password": 1, "known_token": 1, "assignment": 1}


def test_a_pem_block_cut_before_its_end_is_redacted_to_the_end() -> None:
    text = "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmU"
    assert redact(text) == f"key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{REDACTED}\n"


def test_hostile_lengths_stay_linear() -> None:
    started = time.monotonic()
    for text in (
        '"' + "a" * 100_000,
        "-----BEGIN RSA PRIVATE KEY-----" + "-" * 100_000,
        "token " * 30_000,
        "mysql " + "-p" * 50_000,
        "x://" * 30_000,
        "'password': '" + "b" * 100_000,
    ):
        redact(text)
    assert time.monotonic() - started < 3.0


# --- end to end: a real process and a real log, collected locally -------------------------

ARGV_FORMS = [
    '{"api_key": "Sx1ApiKeyJson"}',
    "{'password': 'Sx2PyDictPw'}",
    "Authorization: Basic Sx3BasicAuth==",
    "redis://:Sx4RedisPw@cache:6379",
    "token",
    "Sx5TokenWord",
    "--token=Sx6FlagTok",
    "AWS_SECRET_ACCESS_KEY=Sx7AwsSecret",
]
LOG_LINES = [
    "2026-12-01T10:00:00Z ERROR upstream refused api_key=Sx8LogApiKey",
    "2026-12-01T10:00:01Z ERROR login failed password=Sx9LogPassword",
    "2026-12-01T10:00:02Z ERROR cannot reach postgres://app:SxAPgPassword@db:5432/app",
]


def test_secrets_of_a_focus_process_and_its_log_never_reach_json_or_the_bundle_report(
    tmp_path: Path,
) -> None:
    log = tmp_path / "app.log"
    log.write_text("\n".join(LOG_LINES) + "\n")
    marker = f"redaction-target-{os.getpid()}"
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", marker, *ARGV_FORMS]
    )
    mysql = subprocess.Popen(["/bin/sh", "-c", f'exec -a mysql sleep 60 "-pSxBMysqlPw" {marker}'])
    try:
        result = run_cli(
            "collect", "local", "--focus", marker, "--log", str(log),
            "--out", str(tmp_path / "out"), "-f", "json", "--fail-on", "never",
        )  # fmt: skip
    finally:
        process.kill()
        mysql.kill()
        process.wait()
        mysql.wait()
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert marker in result.stdout  # the process was seen
    assert any(finding["id"] == "log.errors" for finding in report["findings"])
    saved = (Path(report["bundle"]) / "report.json").read_text()
    for text in (result.stdout, saved):
        leaked = sorted(set(re.findall(r"Sx[0-9A-B][A-Za-z0-9]+", text)))
        assert leaked == [], leaked
    raw = (Path(report["bundle"]) / "raw" / "logs.txt").read_text()
    assert "Sx8LogApiKey" in raw  # the evidence itself is kept verbatim
