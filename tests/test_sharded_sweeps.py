"""Sharded sweeps over real sshd on loopback into one PostgreSQL history: 64 hosts split 4
ways by four collectors running at once cover every host exactly once; a second collector
on a shard someone holds exits 4 at once; a collector killed mid-sweep loses no host that
finished; ``fleet-report --since`` sees every shard's latest runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from forensics.fleet.history_location import open_history
from forensics.fleet.shard import Shard, shard_of
from forensics.fleet.store_postgres import PostgresHistory
from tests.conftest import run_cli
from tests.postgres import PostgresServer
from tests.sshd import SshServer

NAMES = [f"gpu-{index:02d}" for index in range(64)]


def _inventory(server: SshServer, path: Path, names: list[str], **settings: object) -> Path:
    """Many inventory names, one real sshd: every name is its own host to the sweep."""
    path.write_text(
        json.dumps(
            {
                "defaults": {
                    "user": os.environ.get("USER", "root"),
                    "identity": str(server.client_key),
                    "known_hosts": str(server.known_hosts),
                    "ssh_config": str(server.root / "ssh_config"),
                    "probes": ["system"],
                    **settings,
                },
                "hosts": [
                    {"name": name, "host": "127.0.0.1", "port": server.port} for name in names
                ],
            }
        )
    )
    return path


def _sweep_process(
    inventory: Path, out: Path, url: str, postgres: PostgresServer, *extra: str
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "forensics", "sweep", "--inventory", str(inventory),
         "--out", str(out), "--history", url, "-f", "json", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        env=postgres.environment(),
    )  # fmt: skip


def test_a_host_always_lands_on_the_same_shard_and_every_host_on_exactly_one() -> None:
    shards = [Shard(index, 4) for index in range(4)]
    owners = {name: [str(s) for s in shards if s.holds(name)] for name in NAMES}
    assert all(len(found) == 1 for found in owners.values())
    assert all(0 < count < 64 for count in Counter(shard_of(n, 4) for n in NAMES).values())
    # sha256, not Python's salted hash(): the same answer in another interpreter.
    other = subprocess.run(
        [sys.executable, "-c", "from forensics.fleet.shard import shard_of;"
         f"print([shard_of(n, 4) for n in {NAMES!r}])"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "7"},
    )  # fmt: skip
    assert other.stdout.strip() == str([shard_of(n, 4) for n in NAMES])


def test_four_collectors_at_once_cover_64_hosts_exactly_once(
    make_sshd: type[SshServer], postgres: PostgresServer, postgres_url: str, tmp_path: Path
) -> None:
    server = make_sshd()
    inventory = _inventory(server, tmp_path / "inventory.yaml", NAMES)
    started = time.monotonic()
    collectors = [
        _sweep_process(
            inventory,
            tmp_path / f"out-{index}",
            postgres_url,
            postgres,
            "--shard",
            f"{index}/4",
            "--concurrency",
            "4",
        )
        for index in range(4)
    ]
    results = [collector.communicate(timeout=300) for collector in collectors]
    elapsed = time.monotonic() - started
    assert [c.returncode for c in collectors] == [0, 0, 0, 0], [err for _, err in results]
    swept = [[host["name"] for host in json.loads(out)["hosts"]] for out, _ in results]
    assert sorted(name for names in swept for name in names) == NAMES
    for index, names in enumerate(swept):
        assert names and all(shard_of(name, 4) == index for name in names)
    with psycopg.connect(postgres_url) as connection:
        rows = connection.execute("SELECT host, status FROM runs ORDER BY host").fetchall()
        sweeps = connection.execute("SELECT count(*) FROM sweeps WHERE finished IS NOT NULL")
        assert sweeps.fetchone() == (4,)
    assert rows == [(name, "ok") for name in NAMES]
    print(f"64 hosts, 4 shards at once: {elapsed:.1f}s")

    report = run_cli(
        "fleet-report", "--since", "20m", "--history", postgres_url, "--inventory",
        str(inventory), "-f", "json", env=postgres.environment(),
    )  # fmt: skip
    assert report.exit_code == 0, report.stderr
    fleet = json.loads(report.stdout)
    assert sorted(host["name"] for host in fleet["hosts"]) == NAMES
    assert all(host["status"] == "ok" and host["report"] for host in fleet["hosts"])
    assert fleet["sweep_id"].endswith("(4 sweeps)")
    assert fleet["history"] == postgres_url
    text = run_cli(
        "fleet-report", "--since", "20m", "--history", postgres_url, env=postgres.environment()
    )
    assert text.exit_code == 0 and "64" in text.stdout, text.stderr


def test_a_second_collector_on_a_held_shard_exits_4_naming_the_holder(
    make_sshd: type[SshServer], postgres: PostgresServer, postgres_url: str, tmp_path: Path
) -> None:
    server = make_sshd()
    inventory = _inventory(server, tmp_path / "inventory.yaml", NAMES[:8])
    holder = open_history(postgres_url, pytest.fail)
    assert isinstance(holder, PostgresHistory)
    try:
        with holder.shard_lock("1/2"):
            blocked = _sweep_process(
                inventory, tmp_path / "out", postgres_url, postgres, "--shard", "1/2"
            )
            _, stderr = blocked.communicate(timeout=60)
            assert blocked.returncode == 4, stderr
            assert stderr.count("\n") == 1
            assert "another collector holds shard 1/2 in" in stderr
            assert f"pid {os.getpid()}" in stderr
            other = _sweep_process(
                inventory, tmp_path / "out0", postgres_url, postgres, "--shard", "0/2"
            )
            _, stderr = other.communicate(timeout=120)
            assert other.returncode == 0, stderr  # another shard is free
        after = _sweep_process(
            inventory, tmp_path / "out1", postgres_url, postgres, "--shard", "1/2"
        )
        _, stderr = after.communicate(timeout=120)
        assert after.returncode == 0, stderr  # released with the block
    finally:
        holder.close()


def test_a_collector_killed_mid_sweep_loses_no_host_that_finished(
    make_sshd: type[SshServer], postgres: PostgresServer, postgres_url: str, tmp_path: Path
) -> None:
    fast = make_sshd()
    slow = make_sshd(force_command="sleep 30")
    inventory = tmp_path / "inventory.yaml"
    document = json.loads(_inventory(fast, inventory, NAMES[:6]).read_text())
    document["hosts"].append(
        {"name": "stuck", "host": "127.0.0.1", "port": slow.port, "identity": str(slow.client_key)}
    )
    document["defaults"]["known_hosts"] = str(tmp_path / "known_hosts")
    (tmp_path / "known_hosts").write_text(
        fast.known_hosts.read_text() + slow.known_hosts.read_text()
    )
    inventory.write_text(json.dumps(document))
    open_history(postgres_url, pytest.fail).close()  # the tables exist before polling them
    collector = _sweep_process(
        inventory, tmp_path / "out", postgres_url, postgres, "--concurrency", "7",
        "--timeout", "60",
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        finished = 0
        while time.monotonic() < deadline and finished < 6:
            time.sleep(0.2)
            with psycopg.connect(postgres_url) as connection:
                row = connection.execute("SELECT count(*) FROM runs").fetchone()
            finished = row[0] if row else 0
        assert finished == 6, "the six quick hosts were not recorded within 90s"
        collector.send_signal(signal.SIGKILL)
        collector.wait(timeout=10)
    finally:
        if collector.poll() is None:
            collector.kill()
            collector.wait()
    with psycopg.connect(postgres_url) as connection:
        runs = connection.execute("SELECT host, status FROM runs ORDER BY host").fetchall()
        findings_per_run = connection.execute(
            "SELECT r.findings, count(f.run_id) FROM runs r LEFT JOIN findings f "
            "ON f.run_id = r.id GROUP BY r.id, r.findings"
        ).fetchall()
    assert runs == [(name, "ok") for name in NAMES[:6]]
    assert all(stated == stored for stated, stored in findings_per_run)
