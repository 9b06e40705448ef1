"""The bare baseline of the fleet bench: a thread pool of paramiko clients, each opening
one connection, running one exec command and keeping its stdout, nothing else.

    python bench/paramiko_pool.py JOB.json

JOB.json (written by bench/fleet_peers.py): user, identity, known_hosts, parallel, out,
and hosts: [{name, port, command}]. Each host's stdout goes to OUT/NAME.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import paramiko


def run_one(job: dict[str, object], host: dict[str, object]) -> None:
    client = paramiko.SSHClient()
    client.load_host_keys(str(job["known_hosts"]))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(
        "127.0.0.1",
        port=int(str(host["port"])),
        username=str(job["user"]),
        key_filename=str(job["identity"]),
        look_for_keys=False,
        allow_agent=False,
        timeout=30,
    )
    try:
        _, stdout, _ = client.exec_command(str(host["command"]))
        (Path(str(job["out"])) / str(host["name"])).write_bytes(stdout.read())
    finally:
        client.close()


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    with ThreadPoolExecutor(max_workers=int(job["parallel"])) as pool:
        for done in [pool.submit(run_one, job, host) for host in job["hosts"]]:
            done.result()


if __name__ == "__main__":
    main()
