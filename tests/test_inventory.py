"""The inventory: the worked example is valid, levels resolve in order, and every mistake is
reported as file:line: field: problem with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.fleet.inventory import InventoryError, load_inventory, parse_inventory
from tests.conftest import run_cli

REPO = Path(__file__).resolve().parent.parent


def test_the_worked_example_at_the_repo_root_is_valid_and_resolves_every_group() -> None:
    result = run_cli("inventory", "check", str(REPO / "inventory.yaml"), "--json")
    assert result.exit_code == 0, result.stderr
    resolved = json.loads(result.stdout)
    hosts = {host["name"]: host for host in resolved["hosts"]}
    assert set(resolved["groups"]) == {"vast", "metal", "lab"}
    # vast.ai: two hosts behind one proxy host on different ports are different hosts
    assert hosts["prover-a"]["target"]["host"] == hosts["prover-b"]["target"]["host"]
    assert hosts["prover-a"]["target"]["port"] != hosts["prover-b"]["target"]["port"]
    assert hosts["prover-a"]["target"]["user"] == "root"
    assert hosts["metal-01"]["target"]["proxy_jump"] == "ops@bastion.example.net:2222"
    assert hosts["lab-gpu-1.example.net"]["target"]["sudo"] is True
    assert hosts["prover-a"]["target"]["sudo"] is False
    assert "lab-gpu-2.example.net:2222" in hosts
    assert hosts["prover-c"]["options"]["timeout"] == 300
    # logs and thresholds reach the options every host is collected with
    options = hosts["prover-a"]["options"]
    assert options["logs"] == ["/workspace/logs/*.log"]
    assert options["expected_logs"] == ["/workspace/logs/supervisor.log"]
    assert options["thresholds"]["near_limit_warning_percent"] == 85
    assert hosts["metal-01"]["options"]["thresholds"]["near_limit_warning_percent"] == 90
    assert options["scripts"] == ["/workspace/benchmark.sh"]


def test_check_prints_the_resolved_hosts() -> None:
    result = run_cli("inventory", "check", str(REPO / "inventory.yaml"), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    assert "8 hosts in 3 groups, valid" in result.stdout
    assert "ops@bastion.example.net:2222" in result.stdout
    header = next(line for line in result.stdout.splitlines() if " sudo " in line)
    sudo_column = header.index(" sudo ")
    lab = [line for line in result.stdout.splitlines() if "lab-gpu" in line]
    assert [line[sudo_column : sudo_column + 6].strip(" │") for line in lab] == ["yes", "yes"]


def test_host_settings_win_over_group_and_group_over_defaults(tmp_path: Path) -> None:
    inventory = parse_inventory(
        "defaults: {user: root, timeout: 2m, focus: cuzk, identity: keys/id}\n"
        "groups:\n"
        "  g:\n"
        "    user: ops\n"
        "    connect_timeout: 90s\n"
        "    hosts:\n"
        "      - {host: 10.0.0.1, timeout: 30, tags: [gpu]}\n"
        "      - {host: 10.0.0.1, port: 2222}\n"
        "hosts:\n"
        "  - {name: lone, host: 10.0.0.9, probes: [system]}\n",
        tmp_path / "inventory.yaml",
    )
    first, second, lone = inventory.hosts
    assert (first.name, first.target.user, first.options.timeout) == ("10.0.0.1", "ops", 30)
    assert first.target.connect_timeout == 90
    assert (second.name, second.options.timeout, second.group) == ("10.0.0.1:2222", 120, "g")
    assert (lone.target.user, lone.options.probes, lone.options.focus) == (
        "root",
        ("system",),
        "cuzk",
    )
    assert lone.target.identity == str(tmp_path / "keys/id")
    assert [host.name for host in inventory.select(limits=["gpu"])] == ["10.0.0.1"]
    assert [host.name for host in inventory.select(groups=["g"])] == ["10.0.0.1", "10.0.0.1:2222"]


def test_env_is_expanded_in_local_paths_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_KEYS", "/srv/keys")
    inventory = parse_inventory(
        "hosts:\n  - {host: h, identity: '${FLEET_KEYS}/id', known_hosts: ~/kh}\n",
        tmp_path / "inventory.yaml",
    )
    assert inventory.hosts[0].target.identity == "/srv/keys/id"
    assert not inventory.hosts[0].target.known_hosts.startswith("~")  # type: ignore[union-attr]
    with pytest.raises(InventoryError, match=r"inventory.yaml:2: hosts\[0\].user: \$\{...\}"):
        parse_inventory("hosts:\n  - {host: h, user: '${USER}'}\n", tmp_path / "inventory.yaml")
    with pytest.raises(InventoryError, match=r":2: hosts\[0\].identity: .*NOT_SET_9 is not set"):
        parse_inventory(
            "hosts:\n  - {host: h, identity: '${NOT_SET_9}/id'}\n", tmp_path / "inventory.yaml"
        )


BAD_INVENTORIES = [
    (
        "unknown field",
        "defaults:\n  user: root\n  prot: 22\nhosts:\n  - host: a\n",
        "inventory.yaml:3: defaults.prot: unknown field (did you mean 'port'?)",
    ),
    (
        "bad port",
        "hosts:\n  - host: a\n  - host: b\n  - name: c\n    host: c\n    port: abc\n",
        "inventory.yaml:6: hosts[2].port: must be 1..65535, got 'abc'",
    ),
    (
        "port out of range in a group",
        "groups:\n  vast:\n    port: 70000\n    hosts:\n      - host: a\n",
        "inventory.yaml:3: groups.vast.port: must be 1..65535, got 70000",
    ),
    (
        "duplicate name",
        "hosts:\n  - name: gpu-a\n    host: a\n  - name: gpu-a\n    host: b\n",
        "inventory.yaml:4: hosts[1].name: duplicate host name 'gpu-a' (first at line 2)",
    ),
    (
        "YAML syntax",
        "hosts:\n  - name: a\n    host: [a\n  - name: b\n",
        "inventory.yaml:4: YAML syntax: expected ',' or ']', but got ':'",
    ),
    (
        "duplicate key",
        "hosts:\n  - host: a\n    port: 22\n    port: 23\n",
        "inventory.yaml:4: hosts[0].port: duplicate key (first at line 3)",
    ),
    (
        "a secret",
        "hosts:\n  - host: a\n    password: hunter2\n",
        "inventory.yaml:3: hosts[0].password: secrets do not belong in the inventory",
    ),
    (
        "missing host",
        "hosts:\n  - name: a\n    port: 22\n",
        "inventory.yaml:2: hosts[0].host: required field is missing",
    ),
    (
        "unknown probe",
        "defaults:\n  probes: [system, teleport]\nhosts:\n  - host: a\n",
        "inventory.yaml:2: defaults.probes: unknown probe 'teleport'",
    ),
    (
        "relative log path",
        "defaults:\n  logs:\n    - /var/log/a.log\n    - bench.log\nhosts:\n  - host: a\n",
        "inventory.yaml:4: defaults.logs[1]: give an absolute path or one starting with ~/, "
        "got 'bench.log'",
    ),
    (
        "logs in the earlier watch/expect shape",
        "defaults:\n  logs:\n    watch: [/var/log/a.log]\nhosts:\n  - host: a\n",
        "inventory.yaml:2: defaults.logs: logs is a list of globs to read; the paths that must "
        "exist go in expected_logs",
    ),
    (
        "unknown threshold",
        "groups:\n  g:\n    thresholds:\n      memory_used_percent: 90\n    hosts: [{host: a}]\n",
        "inventory.yaml:4: groups.g.thresholds.memory_used_percent: unknown name; thresholds are: "
        "near_limit_warning_percent,",
    ),
    (
        "threshold out of range",
        "hosts:\n  - host: a\n    thresholds:\n      near_limit_warning_percent: 120\n",
        "inventory.yaml:4: hosts[0].thresholds.near_limit_warning_percent: input should be less "
        "than or equal to 100, got 120",
    ),
    (
        "warning threshold above the critical one",
        "hosts:\n  - host: a\n    thresholds: {near_limit_warning_percent: 98}\n",
        "inventory.yaml:3: hosts[0].thresholds: near_limit_warning_percent (98) must not be above "
        "near_limit_critical_percent (97)",
    ),
    (
        "a deadline that is not a number",
        "defaults:\n  timeout: .nan\nhosts:\n  - host: a\n",
        "inventory.yaml:2: defaults.timeout: nan is not a duration: write e.g. 90, 90s, 500ms",
    ),
    (
        "an infinite connect timeout",
        "hosts:\n  - host: a\n    connect_timeout: .inf\n",
        "inventory.yaml:3: hosts[0].connect_timeout: inf is not a duration",
    ),
    (
        "log lines out of range",
        "hosts:\n  - host: a\n    log_lines: 0\n",
        "inventory.yaml:3: hosts[0].log_lines: input should be greater than or equal to 1, got 0",
    ),
    (
        "a host name with an empty label",
        "hosts:\n  - host: a..b\n",
        "inventory.yaml:2: hosts[0].host: not a host name: every dot-separated label needs 1 to 63",
    ),
    ("not a mapping", "- host: a\n", "inventory.yaml:1: (top level): expected a mapping"),
    ("empty", "# nothing\n", "inventory.yaml:1: the inventory is empty"),
]


@pytest.mark.parametrize(
    ("text", "message"),
    [(text, message) for _, text, message in BAD_INVENTORIES],
    ids=[case for case, _, _ in BAD_INVENTORIES],
)
def test_inventory_errors_name_file_line_and_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InventoryError) as raised:
        parse_inventory(text, tmp_path / "inventory.yaml")
    assert f"{tmp_path}/{message}" in raised.value.message


@pytest.mark.parametrize(
    "case",
    [
        "unknown field",
        "bad port",
        "duplicate name",
        "YAML syntax",
        "a deadline that is not a number",
    ],
)
def test_the_command_line_prints_the_error_and_exits_2(tmp_path: Path, case: str) -> None:
    (text, message) = next((t, m) for c, t, m in BAD_INVENTORIES if c == case)
    path = tmp_path / "inventory.yaml"
    path.write_text(text)
    result = run_cli("inventory", "check", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"forensics: {tmp_path}/{message}")
    assert "Traceback" not in result.stderr


def test_sweep_refuses_a_bad_inventory_before_touching_any_host(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text("hosts:\n  - host: 127.0.0.1\n    port: 0\n")
    result = run_cli("sweep", "--inventory", str(path), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "inventory.yaml:3: hosts[0].port: must be 1..65535, got 0" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_missing_inventory_says_how_to_pass_one(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match=r"no such inventory file .*sweep --inventory FILE"):
        load_inventory(tmp_path / "inventory.yaml")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("hosts:-[]{}&*!| \n\t'\"#name22port$"))))
def test_any_text_is_an_inventory_or_an_inventory_error(text: str) -> None:
    try:
        parse_inventory(text, Path("inventory.yaml"))
    except InventoryError as error:
        assert error.message.startswith("inventory.yaml")


def test_check_says_what_a_sweep_would_fail_on_before_it_runs(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("not readable by anyone\n")
    key.chmod(0)
    config = tmp_path / "ssh_config"
    config.write_text("Host known-alias\n  HostName 127.0.0.1\n")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        "hosts:\n"
        f"  - {{name: a, host: 127.0.0.1, identity: {tmp_path}/missing}}\n"
        f"  - {{name: b, host: 127.0.0.1, known_hosts: {tmp_path}/no_known_hosts}}\n"
        f"  - {{name: c, host: nosuchalias, ssh_config: {config}}}\n"
        f"  - {{name: d, host: known-alias, ssh_config: {config}}}\n"
    )
    result = run_cli("inventory", "check", "--inventory", str(inventory))
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert f"forensics: warning: a: identity file {tmp_path}/missing does not exist" in lines
    assert any(line.startswith("forensics: warning: b: known_hosts") for line in lines)
    assert any("c: 'nosuchalias' looks like an SSH config alias" in line for line in lines)
    assert not any(": d: " in line for line in lines)
    document = json.loads(run_cli("inventory", "check", str(inventory), "--json").stdout)
    assert set(document["problems"]) == {"a", "b", "c"}


def test_a_missing_inventory_says_how_to_name_one(tmp_path: Path) -> None:
    result = run_cli("inventory", "check", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2
    assert "forensics inventory check FILE" in result.stderr
