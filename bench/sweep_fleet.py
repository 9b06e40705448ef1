"""Benchmark: `forensics sweep` over N real sshd hosts on loopback, side by side with the
same script sent by the OpenSSH client (`ssh host sh -s < script`), one host after another
and N-at-a-time, in the same run over the same hosts.

    python bench/sweep_fleet.py --hosts 16 --concurrency 16

Prints wall time for the whole fleet and per-host figures (min, median, max seconds).
Loopback measures our own overhead (connection set-up, script, framing, parsing, writing
bundles), not the network.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from forensics.core.models import CollectOptions  # noqa: E402
from forensics.probes import PROBES  # noqa: E402
from forensics.remote.host_script import compose  # noqa: E402
from tests.fleet import Fleet, fleet  # noqa: E402


def _figures(seconds: list[float]) -> str:
    return (
        f"min {min(seconds):6.2f}  median {statistics.median(seconds):6.2f}  "
        f"max {max(seconds):6.2f}"
    )


def _ssh_once(made: Fleet, port: int, script: Path) -> float:
    user = os.environ.get("USER", "root")
    began = time.monotonic()
    with script.open("rb") as stdin:
        subprocess.run(
            ["ssh", "-F", str(made.root / "ssh_config"), "-p", str(port),
             "-i", str(made.client_key), "-o", f"UserKnownHostsFile={made.known_hosts}",
             "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
             f"{user}@127.0.0.1", "sh -s"],
            stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
        )  # fmt: skip
    return time.monotonic() - began


def _ssh_loop(made: Fleet, script: Path, parallel: int) -> tuple[float, list[float]]:
    began = time.monotonic()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        per_host = list(pool.map(lambda host: _ssh_once(made, host.port, script), made.hosts))
    return time.monotonic() - began, per_host


def _forensics_sweep(made: Fleet, root: Path, concurrency: int) -> tuple[float, list[float]]:
    inventory = made.write_inventory(root / "inventory.yaml")
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "forensics", "sweep", "--inventory", str(inventory),
         "--out", str(root / "out"), "--concurrency", str(concurrency), "--format", "json",
         "--fail-on", "never"],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    wall = time.monotonic() - began
    if result.returncode != 0:
        raise SystemExit(f"sweep failed ({result.returncode}): {result.stderr}")
    report = json.loads(result.stdout)
    per_host = [
        (
            datetime.fromisoformat(host["finished"]) - datetime.fromisoformat(host["started"])
        ).total_seconds()
        for host in report["hosts"]
    ]
    return wall, per_host


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=16)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix=f"bench-sweep-{os.getpid()}-") as directory:
        root = Path(directory)
        with fleet(root / "fleet") as made:
            started = time.monotonic()
            for number in range(arguments.hosts):
                made.add(f"host-{number:03d}")
            print(f"{arguments.hosts} sshd hosts started in {time.monotonic() - started:.1f}s")
            specs = [spec for probe in PROBES for spec in probe.sections(CollectOptions())]
            script = root / "script.sh"
            script.write_text(compose(specs).text)
            rows = [
                ("forensics sweep", *_forensics_sweep(made, root, arguments.concurrency)),
                ("ssh host sh -s, one at a time", *_ssh_loop(made, script, 1)),
                (
                    f"ssh host sh -s, {arguments.concurrency} at a time",
                    *_ssh_loop(made, script, arguments.concurrency),
                ),
            ]
    print(f"{'':36} {'wall':>7}   per host (s)")
    for name, wall, per_host in rows:
        print(f"{name:36} {wall:6.2f}s   {_figures(per_host)}")


if __name__ == "__main__":
    main()
