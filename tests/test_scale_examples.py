"""The deployment examples in docs/ are real: the Kubernetes manifests validate against the
Kubernetes schemas (kubernetes-validate, strict: no unknown field; no cluster needed), the
Indexed Job gives each pod its own shard of as many as it has completions, and every
option the manifests and the systemd unit pass to forensics exists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from forensics.fleet.inventory import load_inventory
from tests.conftest import run_cli

DOCS = Path(__file__).resolve().parent.parent / "docs"
KUBERNETES_VERSION = "1.29"
MANIFESTS = sorted((DOCS / "kubernetes").glob("*.yaml"))


def _documents() -> list[dict[str, Any]]:
    return [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]


def _options(command: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", command))


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_every_manifest_validates_against_the_kubernetes_schemas(path: Path) -> None:
    for document in yaml.safe_load_all(path.read_text()):
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_the_validator_would_catch_a_misspelt_field() -> None:
    (sweep, *_) = [doc for doc in _documents() if doc["kind"] == "CronJob"]
    sweep["spec"]["jobTemplate"]["spec"]["completionz"] = 4
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(sweep, KUBERNETES_VERSION, strict=True)


def test_the_indexed_job_sweeps_one_shard_per_completion_from_postgres() -> None:
    (sweep,) = [d for d in _documents() if d["metadata"]["name"] == "forensics-sweep"]
    job = sweep["spec"]["jobTemplate"]["spec"]
    assert job["completionMode"] == "Indexed"
    pod = job["template"]["spec"]
    (container,) = pod["containers"]
    env = {item["name"]: item for item in container["env"]}
    assert int(env["SHARDS"]["value"]) == job["completions"] == job["parallelism"]
    command = " ".join(container["args"])
    assert '--shard "$JOB_COMPLETION_INDEX/$SHARDS"' in command
    url = env["FORENSICS_HISTORY_URL"]["value"]
    assert url.startswith("postgresql://") and ":" not in url.split("//")[1].split("@")[0]
    assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "forensics-history"
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    assert volumes["ssh-key"]["secret"]["secretName"] == "forensics-ssh"
    assert volumes["known-hosts"]["configMap"]["name"] == "forensics-known-hosts"


def test_the_inventory_in_the_configmap_loads(tmp_path: Path) -> None:
    (configmap,) = [d for d in _documents() if d["metadata"]["name"] == "forensics-inventory"]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(configmap["data"]["inventory.yaml"])
    loaded = load_inventory(inventory)
    assert [host.name for host in loaded.hosts] == ["prover-a.example.net", "prover-b.example.net"]


def test_every_option_the_examples_pass_exists() -> None:
    sweep_help = run_cli("sweep", "--help", env={"COLUMNS": "200"}).stdout
    report_help = run_cli("fleet-report", "--help", env={"COLUMNS": "200"}).stdout
    unit = (DOCS / "systemd" / "forensics-sweep@.service").read_text()
    (exec_start,) = re.findall(r"^ExecStart=((?:.*\\\n)*.*)$", unit, re.M)
    commands = [(exec_start, sweep_help)]
    for document in _documents():
        if document["kind"] != "CronJob":
            continue
        spec = document["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        for container in spec["containers"]:
            command = " ".join(container.get("args", []))
            commands.append((command, report_help if "fleet-report" in command else sweep_help))
    for command, help_text in commands:
        for option in _options(command):
            assert option in help_text, f"{option} in {command!r}"
