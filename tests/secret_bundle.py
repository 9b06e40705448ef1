"""A real bundle that holds secrets: a local collection (no SSH) while a process runs with
secrets on its command line and in its environment, and writes its environment and some
credentials into a log the collection reads (the way a daemon's startup log leaks them)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import run_cli

MARKER = "ticket-secrets-demo"
# A focus nothing matches: a certain critical finding (focus.not_running) with next steps.
ABSENT_FOCUS = "cuzk-daemon-that-never-started"
ARGV_SECRETS = {
    "api_key": "argvApiKeyQ7x9SecretValue",
    "password": "argvPassw0rdSecretValue",
    "token": "argvTok3nSecretValue77",
    "url_password": "urlPassw0rdSecretValue",
}
ENV_SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "envAwsSecretKeyValue0123456789abcdef",
    "GITHUB_TOKEN": "ghp_EnvGithubTokenValue0123456789abcd",
    "DB_PASSWORD": "envDbPassw0rdSecretValue",
}
LOG_SECRETS = {
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJsb2dKd3QifQ.bG9nSnd0U2lnbmF0dXJlU2VjcmV0",
    "json_password": "logJsonPassw0rdSecret",
    "aws_key_id": "AKIALOGSECRETKEY0123",
    "gitlab": "glpat-LogGitlabTokenSecret0123",
    "pem_body": "MIIEpAIBAAKCAQEAlogPemBodySecretLine",
    "pem_body_2": "SecondPemLineOfTheLogKeyBodySecret",
}
ALL_SECRETS = [*ARGV_SECRETS.values(), *ENV_SECRETS.values(), *LOG_SECRETS.values()]

_DAEMON = """
import os, sys, time
with open(sys.argv[1], "w") as log:
    log.write("daemon starting; environment:\\n")
    for name in sorted(os.environ):
        log.write(f"{name}={os.environ[name]}\\n")
    log.write(sys.argv[2])
    log.flush()
    time.sleep(120)
"""


def log_text() -> str:
    jwt, password = LOG_SECRETS["jwt"], LOG_SECRETS["json_password"]
    return (
        f"GET /v1/jobs Authorization: Bearer {jwt}\n"
        f'config loaded: {{"password": "{password}", "region": "eu-west-1"}}\n'
        f"aws key id {LOG_SECRETS['aws_key_id']} and token {LOG_SECRETS['gitlab']}\n"
        "-----BEGIN RSA PRIVATE KEY-----\n"
        f"{LOG_SECRETS['pem_body']}\n"
        f"{LOG_SECRETS['pem_body_2']}\n"
        "-----END RSA PRIVATE KEY-----\n"
        "daemon ready\n"
    )


def collect_with_secrets(root: Path) -> Path:
    """Collect this machine while the secret-holding daemon runs; the bundle's path."""
    root.mkdir(parents=True, exist_ok=True)
    log = root / "logs" / "daemon.log"
    log.parent.mkdir(exist_ok=True)
    argv = [
        sys.executable, "-c", _DAEMON, str(log), log_text(), MARKER,
        f"--api-key={ARGV_SECRETS['api_key']}", f"PASSWORD={ARGV_SECRETS['password']}",
        "--token", ARGV_SECRETS["token"],
        f"--db=postgres://svc:{ARGV_SECRETS['url_password']}@db.internal:5432/jobs",
    ]  # fmt: skip
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **ENV_SECRETS}
    daemon = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while "daemon ready" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline, "the daemon never wrote its log"
            time.sleep(0.02)
        result = run_cli(
            "collect", "local", "--out", str(root / "bundles"), "--fail-on", "never",
            "--probe", "processes", "--probe", "logs", "--probe", "system",
            "--log", str(log), "--focus", ABSENT_FOCUS, "--snapshot-gap", "0", "--format", "json",
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
    finally:
        daemon.kill()
        daemon.wait()
    [bundle] = (root / "bundles" / "local").iterdir()
    raw = b"".join(path.read_bytes() for path in (bundle / "raw").iterdir())
    for secret in [*ARGV_SECRETS.values(), *ENV_SECRETS.values(), *LOG_SECRETS.values()]:
        assert secret.encode() in raw, f"the bundle should hold {secret} verbatim"
    return bundle
