"""How many hosts a sweep collects at once.

The default is 64: on a 2-core client a sweep of 64 loopback hosts at 50 ms RTT took
11.4 s at 16 and 5.6 s at 64 (issue 15), since each host mostly waits on its network and
its own script (the process snapshot's gap alone is 2 s); past 64 the client's CPU (key
exchange, parsing) is the limit, not the waiting.
Each host in flight holds at most ``DESCRIPTORS_PER_HOST`` file descriptors (its SSH
socket, a jump host's socket, the bundle file being written, a spare), so the open-file
limit bounds it too; ``RESERVED_DESCRIPTORS`` stay for the interpreter, the history
database and the lock. Memory is bounded by the sections' caps: a host's output is read
into memory at most once (``Script.max_output_bytes``), an idle host's is under 100 KB.
"""

from __future__ import annotations

import resource

DEFAULT = 64
DESCRIPTORS_PER_HOST = 8
RESERVED_DESCRIPTORS = 64


def fitting(requested: int, open_files: int | None = None) -> int:
    """``requested``, or fewer when the open-file limit cannot hold that many hosts.

    >>> fitting(64, open_files=1024)
    64
    >>> fitting(64, open_files=256)
    24
    >>> fitting(64, open_files=16)
    1
    """
    limit = open_files if open_files is not None else _soft_open_files()
    room = (limit - RESERVED_DESCRIPTORS) // DESCRIPTORS_PER_HOST
    return max(1, min(requested, room))


def _soft_open_files() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20
