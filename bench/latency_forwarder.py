"""A TCP forwarder on loopback that adds a round-trip time, for benches of SSH over a
network (``tc netem`` needs privileges these machines do not grant).

Each chunk read from one side is written to the other side half the RTT later, in order,
while reading goes on: a link with delay, not a slow link. A new connection waits half
the RTT before it reaches the server, as the server would see the client's SYN.

    python bench/latency_forwarder.py --rtt-ms 50 2201 2202

prints one line per target, ``LISTEN_PORT TARGET_PORT``, then serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
from pathlib import Path

CHUNK = 65536


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    delivering = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(CHUNK)
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
        await delivering
    finally:
        delivering.cancel()


async def _connection(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    target: int,
    delay: float,
) -> None:
    await asyncio.sleep(delay)
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
    except OSError:
        client_writer.close()
        return
    with contextlib.suppress(OSError):
        await asyncio.gather(
            _pump(client_reader, server_writer, delay),
            _pump(server_reader, client_writer, delay),
        )
    for writer in (client_writer, server_writer):
        writer.close()


async def serve(targets: list[int], rtt_s: float) -> None:
    delay = rtt_s / 2
    servers = []
    for target in targets:

        async def accepted(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, target: int = target
        ) -> None:
            await _connection(reader, writer, target, delay)

        server = await asyncio.start_server(accepted, "127.0.0.1", 0, backlog=256)
        servers.append(server)
        print(server.sockets[0].getsockname()[1], target, flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


def start(targets: list[int], rtt_ms: float) -> tuple[subprocess.Popen[str], dict[int, int]]:
    """Run a forwarder in its own process; returns it and {target port: listening port}."""
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--rtt-ms", str(rtt_ms),
         *map(str, targets)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    ports = {}
    for _ in targets:
        listening, target = process.stdout.readline().split()
        ports[int(target)] = int(listening)
    return process, ports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt-ms", type=float, required=True)
    parser.add_argument("targets", type=int, nargs="+", help="ports on 127.0.0.1")
    arguments = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(arguments.targets, arguments.rtt_ms / 1000))


if __name__ == "__main__":
    main()
