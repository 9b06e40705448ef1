"""`inventory import-vastai`: vast.ai instance rows become inventory entries that the
inventory accepts, with the endpoint the vast.ai CLI itself would use, and no secrets."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.core.errors import UsageError
from forensics.fleet.inventory import parse_inventory
from forensics.fleet.vastai import parse_instances, to_yaml
from tests.conftest import run_cli

# Rows shaped like `vastai show instances --raw` (FORMATS.md §6), ids and addresses made up.
ROWS = [
    {
        "id": 4242,
        "label": "prover a",
        "machine_id": 9,
        "actual_status": "running",
        "ssh_host": "ssh4.vast.ai",
        "ssh_port": 31874,
        "ssh_idx": "4",
        "image_runtype": "ssh",
        "gpu_name": "RTX 4090",
        "num_gpus": 2,
        "public_ipaddr": "203.0.113.7",
        "ports": {"22/tcp": [{"HostIp": "0.0.0.0", "HostPort": "40022"}]},
        "extra_env": {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz"},
        "jupyter_token": "0123456789abcdef",
        "onstart": "export API_KEY=supersecret",
    },
    {
        "id": 77,
        "label": None,
        "ssh_host": "ssh7.vast.ai",
        "ssh_port": "20000",
        "image_runtype": "jupyter_direc ssh_direc",
        "gpu_name": "RTX_3090",
        "ports": {},
    },
    {"id": 78, "label": "prover a", "ssh_host": "ssh7.vast.ai", "ssh_port": 20010},
    {"id": 79, "actual_status": "exited"},
]


def test_instances_become_inventory_entries_that_validate(tmp_path: Path) -> None:
    source = tmp_path / "instances.json"
    source.write_text(json.dumps(ROWS))
    result = run_cli("inventory", "import-vastai", str(source))
    assert result.exit_code == 0, result.stderr
    for secret in ("hf_abcdef", "0123456789abcdef", "supersecret"):
        assert secret not in result.stdout
    assert "skipped instance 79" in result.stderr
    inventory = parse_inventory(result.stdout, tmp_path / "imported.yaml")
    hosts = {host.name: host for host in inventory.hosts}
    direct = hosts["prover-a"]
    assert (direct.target.host, direct.target.port, direct.target.user) == (
        "203.0.113.7",
        40022,
        "root",
    )
    assert "RTX_4090" in direct.tags
    jupyter = hosts["vast-77"]
    assert (jupyter.target.host, jupyter.target.port) == ("ssh7.vast.ai", 20001)
    assert hosts["prover-a-78"].target.port == 20010


def test_import_reads_stdin_and_rejects_what_is_not_vastai_json() -> None:
    result = run_cli("inventory", "import-vastai", "-")
    assert result.exit_code == 2
    assert "not JSON from `vastai show instances --raw`" in result.stderr


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(0, 70000) | st.text(max_size=8)
        | st.sampled_from(["ssh4.vast.ai", "a b", "22", "jupyter", "x/y", "203.0.113.7"]),
        lambda children: st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["id", "label", "ssh_host", "ssh_port", "ports", "22/tcp",
                             "HostPort", "public_ipaddr", "image_runtype", "instances"]),
            children,
            max_size=5,
        ),
        max_leaves=12,
    )
)  # fmt: skip
def test_any_json_gives_entries_the_inventory_accepts_or_a_usage_error(data: object) -> None:
    try:
        hosts, _ = parse_instances(json.dumps(data))
    except UsageError:
        return
    if hosts:
        parse_inventory(to_yaml(hosts), Path("imported.yaml"))
