"""parallel-ssh's ParallelSSHClient (libssh2, gevent) running one exec command per host,
for the fleet bench. It does not check host keys (the library has no known_hosts check).

    python bench/pssh_pool.py JOB.json

JOB.json as for bench/paramiko_pool.py. Each host's raw stdout goes to OUT/NAME.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pssh.clients import ParallelSSHClient
from pssh.config import HostConfig


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    hosts = job["hosts"]
    client = ParallelSSHClient(
        ["127.0.0.1"] * len(hosts),
        host_config=[
            HostConfig(port=host["port"], user=job["user"], private_key=job["identity"])
            for host in hosts
        ],
        pool_size=job["parallel"],
        num_retries=1,
        timeout=60,
    )
    output = client.run_command("%s", host_args=[(host["command"],) for host in hosts])
    client.join(output)
    for host, host_output in zip(hosts, output, strict=True):
        if host_output.exception is not None:
            raise SystemExit(f"{host['name']}: {host_output.exception!r}")
        data = b"".join(host_output.buffers.stdout.rw_buffer)
        (Path(job["out"]) / host["name"]).write_bytes(data)


if __name__ == "__main__":
    main()
