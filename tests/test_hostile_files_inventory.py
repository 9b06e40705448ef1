"""Inventories and vast.ai exports written by someone else: a label is data and cannot add
YAML, a port stays a port, and reading a hostile file is bounded in time and memory."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.fleet.inventory import parse_inventory
from forensics.fleet.vastai import parse_instances, to_yaml
from tests.conftest import run_cli

INJECTION = "x\ndefaults:\n  proxy_jump: root@attacker.example\n  accept_new_host_key: true #"


def _import(tmp_path: Path, rows: list[dict[str, object]]) -> tuple[int, str, str]:
    source = tmp_path / "instances.json"
    source.write_text(json.dumps(rows))
    result = run_cli("inventory", "import-vastai", str(source))
    return result.exit_code, result.stdout, result.stderr


def test_a_skipped_instance_label_cannot_inject_yaml(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = [
        {"id": 1, "label": INJECTION},  # no endpoint: skipped
        {"id": 2, "label": "ok", "ssh_host": "ssh4.vast.ai", "ssh_port": 31874},
    ]
    code, stdout, stderr = _import(tmp_path, rows)
    assert code == 0, stderr
    inventory = parse_inventory(stdout, tmp_path / "imported.yaml")
    assert [host.target.proxy_jump for host in inventory.hosts] == [None]
    assert "attacker" not in stdout and "defaults" not in stdout
    (note,) = stderr.splitlines()
    assert note.startswith("forensics: skipped instance 1 (x\\ndefaults:") and "\n" not in note


def test_an_imported_label_stays_one_host_name(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = [
        {"id": 3, "label": INJECTION, "ssh_host": "ssh4.vast.ai", "ssh_port": 31874},
    ]
    code, stdout, stderr = _import(tmp_path, rows)
    assert code == 0, stderr
    (host,) = parse_inventory(stdout, tmp_path / "imported.yaml").hosts
    assert host.target.proxy_jump is None and host.target.host == "ssh4.vast.ai"
    assert host.name.startswith("x-defaults:-proxy_jump:")


def test_a_jupyter_instance_on_the_last_port_is_skipped_not_port_65536(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = [
        {"id": 4, "ssh_host": "ssh4.vast.ai", "ssh_port": 65535, "image_runtype": "jupyter"},
    ]
    code, stdout, stderr = _import(tmp_path, rows)
    assert code == 0, stderr
    assert "65536" not in stdout
    assert (
        parse_inventory(stdout + "\n", tmp_path / "imported.yaml") if "- name" in stdout else True
    )
    assert stderr.splitlines() == [
        "forensics: skipped instance 4: no SSH endpoint (no ports['22/tcp'] and no "
        "ssh_host/ssh_port)"
    ]


@settings(max_examples=150, deadline=None)
@given(label=st.text(), port=st.integers(0, 70000), jupyter=st.booleans())
def test_any_label_and_port_give_an_inventory_with_exactly_those_hosts(
    label: str, port: int, jupyter: bool
) -> None:
    row = {
        "id": 9,
        "label": label,
        "ssh_host": "ssh4.vast.ai",
        "ssh_port": port,
        "image_runtype": "jupyter" if jupyter else "ssh",
    }
    hosts, skipped = parse_instances(json.dumps([row]))
    text = to_yaml(hosts)
    if not hosts:
        assert len(skipped) == 1
        return
    inventory = parse_inventory(text, Path("imported.yaml"))
    assert [(h.name, h.target.host, h.target.proxy_jump) for h in inventory.hosts] == [
        (hosts[0].name, "ssh4.vast.ai", None)
    ]
    assert 1 <= inventory.hosts[0].target.port <= 65535


BILLION_LAUGHS = "\n".join(
    ['a0: &a0 ["lol"]']
    + [f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]" for level in range(1, 10)]
    + ["hosts: *a9"]
)


def _bounded_check(path: str, memory_bytes: int = 1 << 30) -> tuple[int, str, float]:
    """``inventory check PATH`` in a child limited to ``memory_bytes`` of address space."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "forensics", "inventory", "check", path],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, done.stderr, time.monotonic() - started


def test_a_billion_laughs_inventory_is_refused_within_bounds(tmp_path: Path) -> None:
    inventory = tmp_path / "laughs.yaml"
    inventory.write_text(BILLION_LAUGHS + "\n")
    code, stderr, elapsed = _bounded_check(str(inventory))
    assert code == 2, stderr
    assert stderr.splitlines() == [
        f"forensics: {inventory}:1: more than 200000 values once aliases are expanded; "
        "refused (aliases that multiply, as in a 'billion laughs' file)"
    ]
    assert elapsed < 20


def test_a_merge_key_cannot_smuggle_the_laughs_in(tmp_path: Path) -> None:
    inventory = tmp_path / "merge.yaml"
    laughs = BILLION_LAUGHS.rsplit("\n", 1)[0]
    inventory.write_text(laughs + "\nm: &m {x: *a9}\nhosts:\n  - {<<: *m, name: a, host: b}\n")
    code, stderr, elapsed = _bounded_check(str(inventory))
    assert code == 2 and elapsed < 20, stderr
    assert "aliases are expanded; refused" in stderr and len(stderr.splitlines()) == 1


def test_an_endless_file_is_not_read_whole() -> None:
    code, stderr, elapsed = _bounded_check("/dev/zero")
    assert code == 2, stderr
    assert stderr == "forensics: /dev/zero: cannot read the inventory: larger than 4 MiB; refused\n"
    assert elapsed < 20


def test_a_raw_escape_byte_is_one_line_naming_it(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("hosts:\n  - name: a\x1b]0;owned\x07\n    host: b\n")
    result = run_cli("inventory", "check", str(inventory))
    assert result.exit_code == 2
    assert result.stderr == (
        f"forensics: {inventory}:2: YAML syntax: raw control character U+001B\n"
    )
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr


def test_nesting_deep_enough_to_exhaust_the_parser_is_one_line(tmp_path: Path) -> None:
    inventory = tmp_path / "deep.yaml"
    inventory.write_text("hosts: " + "[" * 5000 + "]" * 5000 + "\n")
    code, stderr, elapsed = _bounded_check(str(inventory))
    assert code == 2 and elapsed < 20, stderr
    assert stderr == f"forensics: {inventory}:1: nested more than 64 levels deep; refused\n"
