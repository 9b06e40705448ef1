"""A real process that holds memory on command, for the cgroup and ``wait`` tests.

Usage: ``python memory_holder.py MARKER CGROUP_DIR``; it moves itself into the v1 memory
cgroup ``CGROUP_DIR`` before allocating, then reads commands on stdin, one per line, and
answers each with one line:

    fill RATIO             allocate 4 MiB at a time until the cgroup's working set
                           (usage - total_inactive_file) reaches RATIO of its limit
    hold BYTES             allocate BYTES in 64 MiB chunks, every page touched
    release STEP_S BYTES   free one chunk every STEP_S seconds; when the cgroup's usage
                           first drops to BYTES or below, print "crossed <monotonic time>"

MARKER only makes the command line unique, for ``--focus``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

PAGE = 4096


def usage(cgroup: Path) -> int:
    return int((cgroup / "memory.usage_in_bytes").read_text())


def working_set(cgroup: Path) -> int:
    stat = dict(line.split() for line in (cgroup / "memory.stat").read_text().splitlines())
    return usage(cgroup) - int(stat["total_inactive_file"])


def touched(size: int) -> bytearray:
    chunk = bytearray(size)
    chunk[::PAGE] = b"\x01" * (size // PAGE)
    return chunk


def main() -> None:
    cgroup = Path(sys.argv[2])
    (cgroup / "cgroup.procs").write_text(str(os.getpid()))
    limit = int((cgroup / "memory.limit_in_bytes").read_text())
    chunks: list[bytearray] = []
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[0] == "fill":
            while working_set(cgroup) < float(words[1]) * limit:
                chunks.append(touched(4 << 20))
            print(f"filled {working_set(cgroup)}", flush=True)
        elif words[0] == "hold":
            wanted = int(words[1])
            while sum(map(len, chunks)) < wanted:
                chunks.append(touched(64 << 20))
            print(f"holding {usage(cgroup)}", flush=True)
        elif words[0] == "release":
            step, threshold = float(words[1]), int(words[2])
            crossed = False
            while chunks:
                chunks.pop()
                if not crossed and usage(cgroup) <= threshold:
                    print(f"crossed {time.monotonic()}", flush=True)
                    crossed = True
                time.sleep(step)
            print("released", flush=True)


if __name__ == "__main__":
    main()
