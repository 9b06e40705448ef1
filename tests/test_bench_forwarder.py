"""The latency forwarder the fleet bench puts in front of its hosts (bench/fleet.py): it
must add the round-trip time asked for, and pass every byte through unchanged."""

from __future__ import annotations

import os
import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest

from bench import latency_forwarder

RTT_MS = 200


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def forwarded() -> Iterator[int]:
    """A port whose connections reach a loopback echo server RTT_MS later each way."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    process, ports = latency_forwarder.start([server.server_address[1]], RTT_MS)
    try:
        yield ports[server.server_address[1]]
    finally:
        process.terminate()
        process.wait()
        server.shutdown()
        server.server_close()


def _round_trip(sock: socket.socket) -> float:
    began = time.monotonic()
    sock.sendall(b"x")
    assert sock.recv(1) == b"x"
    return time.monotonic() - began


def test_a_round_trip_takes_the_asked_rtt(forwarded: int) -> None:
    with socket.create_connection(("127.0.0.1", forwarded)) as sock:
        _round_trip(sock)  # the first one also pays for reaching the server
        trips = [_round_trip(sock) for _ in range(3)]
    # Never less than the RTT; more only by what a loaded machine adds to a wake-up.
    assert min(trips) >= RTT_MS / 1000 * 0.98
    assert min(trips) < RTT_MS / 1000 + 0.5


def test_bytes_pass_intact_both_ways(forwarded: int) -> None:
    sent = os.urandom(3 << 20)
    received = bytearray()
    with socket.create_connection(("127.0.0.1", forwarded)) as sock:
        writer = threading.Thread(target=sock.sendall, args=(sent,))
        writer.start()
        while len(received) < len(sent):
            chunk = sock.recv(1 << 20)
            assert chunk, "the forwarder closed the connection early"
            received += chunk
        writer.join()
        sock.shutdown(socket.SHUT_WR)
        assert sock.recv(1) == b""  # end of stream is forwarded too
    assert bytes(received) == sent
