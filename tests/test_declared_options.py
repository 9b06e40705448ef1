"""Options are declared once (``SshOptions``, ``CollectOptions``): the command line, the
inventory and the manifest use the same names, every value is checked where it is
declared, and a bad value or a usage mistake is one line with exit status 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer.main

from forensics.cli.app import app
from forensics.cli.options import flag_of
from forensics.core.models import CollectOptions, SshOptions
from forensics.fleet.inventory import OPTIONS, parse_inventory
from tests.conftest import CliResult, run_cli


def _one_line_usage_error(result: CliResult) -> None:
    assert result.exit_code == 2, result
    assert result.stderr.startswith("forensics: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr and "Usage:" not in result.stderr
    assert result.stdout == ""


def _flags(command: str) -> set[str]:
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return {name for param in click_command.params for name in param.opts}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--timeout", "nan"], "--timeout: 'nan' is not a duration"),
        (["--connect-timeout", "nan"], "--connect-timeout: 'nan' is not a duration"),
        (["--gpu-timeout", "nan"], "--gpu-timeout: 'nan' is not a duration"),
        (["--snapshot-gap", "inf"], "--snapshot-gap: 'inf' is not a duration"),
        (["--timeout", "0"], "--timeout: input should be greater than 0"),
        (["--snapshot-gap", "2m"], "--snapshot-gap: input should be less than or equal to 60"),
        (["--log-lines", "1001"], "--log-lines: input should be less than or equal to 1000"),
        (["--port", "0", "gpu-a"], "--port: must be 1..65535, got '0'"),
        (
            ["--threshold", "near_limit_warning_percent=98"],
            "--threshold: near_limit_warning_percent (98) must not be above "
            "near_limit_critical_percent (97)",
        ),
        (["--threshold", "available_critical_percent=20"], "must not be above"),
        (["--threshold", "near=1"], "--threshold near: unknown name; thresholds are: "),
        (["--log", "bench.log"], "--log: give an absolute path or one starting with ~/"),
        (["--expected-log", "x.log"], "--expected-log: give an absolute path"),
        (["--focus", "a("], "--focus: not a usable pattern"),
        (["a" * 64 + ".example.net"], "not a host name: every dot-separated label needs 1 to 63"),
        (["."], "target '.': not a host name"),
        ([".."], "target '..': not a host name"),
        (["a..b"], "target 'a..b': not a host name"),
        (["--bogus"], "no such option: --bogus"),
        (["--format", "xml"], "invalid value for '--format'"),
        (["one", "two"], "unexpected extra argument"),
    ],
)
def test_a_bad_collect_option_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], says: str
) -> None:
    result = run_cli("collect", *args, "--out", str(tmp_path))
    _one_line_usage_error(result)
    assert says in result.stderr, result.stderr
    assert not any(tmp_path.iterdir()), "nothing is collected on bad input"


@pytest.mark.parametrize(
    "args",
    [
        ["analyze"],
        ["diff", "only-one"],
        ["sweep", "--concurrency", "many"],
        ["inventory", "check", "--bogus"],
        ["watch", "--every", "soon"],
        ["lint-script", "--bogus"],
        ["wait", "--available", ">=1GiB", "--timeout", "nan"],
    ],
)
def test_usage_errors_of_every_command_are_one_line(args: list[str]) -> None:
    _one_line_usage_error(run_cli(*args))


def test_help_is_still_the_whole_help() -> None:
    result = run_cli("collect", "--help")
    assert result.exit_code == 0, result
    assert result.stdout.startswith("Usage: ")
    for flag in ("--expected-log", "--gpu-timeout DURATION", "--threshold NAME=VALUE", "--sudo"):
        assert flag in result.stdout


@pytest.mark.parametrize("command", ["watch", "wait"])
def test_watch_and_wait_take_the_ssh_options_of_collect_sudo_included(command: str) -> None:
    ssh_flags = {flag_of(name, info) for name, info in SshOptions.model_fields.items()}
    assert "--sudo" in ssh_flags
    assert ssh_flags <= _flags(command)
    assert ssh_flags <= _flags("collect")


def test_the_inventory_can_set_every_option_the_command_line_can() -> None:
    declared = {**SshOptions.model_fields, **CollectOptions.model_fields}
    assert set(OPTIONS) == set(declared)
    assert {flag_of(name, info) for name, info in declared.items()} <= _flags("collect")
    inventory = parse_inventory(
        "hosts:\n"
        "  - host: gpu-a\n"
        "    log_lines: 20\n"
        "    gpu_timeout: 1m\n"
        "    snapshot_gap: 500ms\n"
        "    timeout: 1h30m\n"
        "    connect_timeout: 15s\n"
        "    logs: [/var/log/a*.log]\n"
        "    expected_logs: [~/bench.log]\n"
        "    thresholds: {near_limit_warning_percent: 80}\n",
        Path("inventory.yaml"),
    )
    options = inventory.hosts[0].options
    assert (options.log_lines, options.gpu_timeout, options.snapshot_gap) == (20, 60, 0.5)
    assert (options.timeout, inventory.hosts[0].target.connect_timeout) == (5400, 15)
    assert (options.logs, options.expected_logs) == (("/var/log/a*.log",), ("~/bench.log",))
    assert options.thresholds.near_limit_warning_percent == 80


def test_inventory_check_json_is_strict_json(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text("hosts:\n  - host: a\n    gpu_timeout: 2.5\n")
    result = run_cli("inventory", "check", str(path), "--json")
    assert result.exit_code == 0, result

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    hosts = json.loads(result.stdout, parse_constant=refuse)["hosts"]
    assert hosts[0]["options"]["gpu_timeout"] == 2.5


@pytest.mark.parametrize(
    "args",
    [["watch", "--cgroup", "/etc"], ["wait", "--cgroup", "/etc", "--available", ">=1GiB"]],
)
def test_watch_and_wait_sample_only_cgroup_directories(args: list[str]) -> None:
    result = run_cli(*args)
    _one_line_usage_error(result)
    assert "--cgroup '/etc': name a directory under /sys/fs/cgroup" in result.stderr


def test_collect_reads_durations_in_the_one_grammar(tmp_path: Path) -> None:
    result = run_cli(
        "collect", "--probe", "system", "--timeout", "1m30s", "--connect-timeout", "500ms",
        "--out", str(tmp_path), "--format", "json", "--fail-on", "never",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    manifest = json.loads(next(tmp_path.glob("local/*/manifest.json")).read_text())
    assert manifest["options"]["timeout"] == 90
    assert manifest["target"]["connect_timeout"] == 0.5


def test_a_bundle_written_with_the_earlier_option_names_still_analyzes(tmp_path: Path) -> None:
    result = run_cli(
        "collect", "--probe", "system", "--probe", "gpu", "--out", str(tmp_path / "out"),
        "--format", "json", "--fail-on", "never",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    bundle = next((tmp_path / "out").glob("local/*/manifest.json")).parent
    earlier = tmp_path / "earlier"
    shutil.copytree(bundle, earlier)
    manifest = json.loads((earlier / "manifest.json").read_text())
    options = manifest["options"]
    del options["timeout"]
    options["gpu_timeout_s"] = options.pop("gpu_timeout")
    options["snapshot_gap_s"] = options.pop("snapshot_gap")
    options["memory_thresholds"] = options.pop("thresholds")
    (earlier / "manifest.json").write_text(json.dumps(manifest))
    now = run_cli("analyze", str(bundle), "--format", "json", "--fail-on", "never")
    then = run_cli("analyze", str(earlier), "--format", "json", "--fail-on", "never")
    assert then.exit_code == 0, then.stderr
    findings = [
        [(f["id"], f["severity"], f["title"]) for f in json.loads(r.stdout)["findings"]]
        for r in (now, then)
    ]
    assert findings[0] == findings[1]


def test_the_docs_list_every_declared_option_under_its_names() -> None:
    repo = Path(__file__).resolve().parent.parent
    inventory_doc = (repo / "docs" / "INVENTORY.md").read_text()
    readme = (repo / "README.md").read_text()
    for name, info in {**SshOptions.model_fields, **CollectOptions.model_fields}.items():
        assert f"| `{name}` |" in inventory_doc, name
        assert f"`{flag_of(name, info)}" in readme, name
