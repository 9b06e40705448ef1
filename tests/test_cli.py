"""The command line's contract: exit statuses, one-line errors, help that teaches."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.scenario import shim_wrapper
from tests.sshd import SshServer


def test_collect_on_this_machine_needs_no_ssh_and_no_config(tmp_path: Path) -> None:
    # Exit 1 is right too when this machine carries critical findings (OOM kills that
    # other tests caused are real kernel events).
    result = run_cli("collect", "--out", str(tmp_path))
    assert result.exit_code in (0, 1), result.stderr
    assert "local: ok" in result.stdout
    assert "bundle:" in result.stdout


def test_an_unknown_probe_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("collect", "--probe", "nosuch", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.strip() == "forensics: unknown probe 'nosuch'"


def test_a_bad_port_in_the_target_is_a_usage_error() -> None:
    result = run_cli("collect", "gpu-a:http")
    assert result.exit_code == 2
    assert "port must be 1..65535" in result.stderr


def test_help_documents_the_exit_statuses() -> None:
    result = run_cli("--help")
    assert result.exit_code == 0
    for words in ("0 collected", "2 usage", "3 could not collect"):
        assert words in " ".join(result.stdout.split())


def test_schema_is_the_json_schema_of_the_host_report() -> None:
    schema = json.loads(run_cli("schema").stdout)
    assert schema["title"] == "HostReport"
    assert {"findings", "facts", "status", "sections"} <= set(schema["properties"])


def test_a_deadline_before_anything_came_back_is_exit_3_and_keeps_the_raw_output(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    server = make_sshd(force_command=shim_wrapper(tmp_path, {"date": "exec sleep 300"}))
    # The system probe alone: in a default run the first process snapshot comes back first.
    result = run_cli(
        "collect", *server.target_args(), "--probe", "system", "--out", str(tmp_path),
        "--timeout", "2",
    )  # fmt: skip
    assert result.exit_code == 3
    assert "deadline passed before any section finished" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert list(tmp_path.glob("root@*/*/manifest.json"))


def test_fail_on_warning_turns_a_warning_into_exit_1(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    server = make_sshd(force_command=shim_wrapper(tmp_path, {"date": "exec sleep 300"}))
    args = [*server.target_args(), "--out", str(tmp_path)]
    assert run_cli("collect", *args, "--fail-on", "warning").exit_code == 1
    bundle = next(tmp_path.glob("root@*/*/manifest.json")).parent
    assert run_cli("analyze", str(bundle), "--fail-on", "never").exit_code == 0
    assert run_cli("analyze", str(bundle), "--fail-on", "critical").exit_code == 0
