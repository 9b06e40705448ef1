"""Prometheus metrics of real sweeps: the textfile parses with prometheus_client's own
parser and says what the sweep found; /metrics answers while a sweep runs and after."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import run_cli
from tests.sshd import SshServer, free_port


def _inventory(path: Path, servers: dict[str, SshServer]) -> Path:
    known = path.parent / "known_hosts"
    known.write_text("".join(server.known_hosts.read_text() for server in servers.values()))
    any_server = next(iter(servers.values()))
    path.write_text(
        json.dumps(
            {
                "defaults": {
                    "user": os.environ.get("USER", "root"),
                    "known_hosts": str(known),
                    "ssh_config": str(any_server.root / "ssh_config"),
                },
                "hosts": [
                    {
                        "name": name,
                        "host": "127.0.0.1",
                        "port": server.port,
                        "identity": str(server.client_key),
                    }
                    for name, server in servers.items()
                ],
            }
        )
    )
    return path


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_the_metrics_file_parses_and_says_what_the_sweep_found(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    inventory = _inventory(tmp_path / "inventory.yaml", {"gpu-a": make_sshd()})
    metrics = tmp_path / "textfile" / "forensics.prom"
    metrics.parent.mkdir()
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"),
        "--metrics-file", str(metrics), "--shard", "0/1", "-f", "json",
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.stderr
    report = json.loads(result.stdout)
    (host,) = report["hosts"]
    samples = _samples(metrics.read_text())
    assert samples[("forensics_host_collection_status", (("host", "gpu-a"), ("status", "ok")))] == 1
    assert (
        samples[("forensics_host_collection_status", (("host", "gpu-a"), ("status", "timeout")))]
        == 0
    )
    assert samples[("forensics_sweep_hosts", (("outcome", "collected"), ("shard", "0/1")))] == 1
    assert samples[("forensics_sweep_hosts", (("outcome", "not_collected"), ("shard", "0/1")))] == 0
    assert samples[("forensics_sweep_running", (("shard", "0/1"),))] == 0
    assert samples[("forensics_host_collection_duration_seconds", (("host", "gpu-a"),))] > 0
    severities = {
        labels[1][1]: value
        for (name, labels), value in samples.items()
        if name == "forensics_host_findings"
    }
    assert set(severities) == {"critical", "warning", "info"}
    by_id = {
        labels[1][1]: value
        for (name, labels), value in samples.items()
        if name == "forensics_host_findings_by_id"
    }
    expected: dict[str, int] = {}
    for finding in host["report"]["findings"]:
        expected[finding["id"]] = expected.get(finding["id"], 0) + 1
    assert by_id == expected
    assert sum(severities.values()) == len(host["report"]["findings"])
    assert [path.name for path in metrics.parent.iterdir()] == ["forensics.prom"]


def test_the_metrics_endpoint_answers_during_a_sweep_and_after_it(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    inventory = _inventory(
        tmp_path / "inventory.yaml",
        {"quick": make_sshd(), "slow": make_sshd(force_command="sleep 20")},
    )
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "forensics", "sweep", "--inventory", str(inventory),
         "--out", str(tmp_path / "out"), "--every", "1h", "--timeout", "6",
         "--metrics-port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        # Served from the start; once the sweep begins it says so, while "slow" still hangs.
        during = _scrape_until(url, lambda text: 'forensics_sweep_running{shard=""} 1.0' in text)
        assert "forensics_host_collection_status" not in during
        after = _scrape_until(url, lambda text: "forensics_host_collection_status" in text)
        samples = _samples(after)
        assert samples[("forensics_sweep_running", (("shard", ""),))] == 0
        assert (
            samples[("forensics_host_collection_status", (("host", "quick"), ("status", "ok")))]
            == 1
        )
        assert (
            samples[("forensics_host_collection_status", (("host", "slow"), ("status", "timeout")))]
            == 1
        )
        assert (
            samples[("forensics_sweep_hosts", (("outcome", "not_collected"), ("shard", "")))] == 1
        )
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0, stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _scrape_until(url: str, ready: object, within_s: float = 60) -> str:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                text: str = response.read().decode()
            if callable(ready) and ready(text):
                return text
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not answer as expected within {within_s}s")


def test_a_busy_metrics_port_is_one_line_and_status_2(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("hosts:\n  - {name: a, host: 127.0.0.1}\n")
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(
            "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"),
            "--metrics-port", str(port),
        )  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert f"--metrics-port {port}: cannot listen on 127.0.0.1:{port}" in result.stderr
