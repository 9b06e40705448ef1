"""``sweep --shard K/N``: which hosts one of N collectors sweeps.

A host belongs to shard ``sha256(name) mod N`` (shards count from 0, like a Kubernetes
Indexed Job's ``$JOB_COMPLETION_INDEX``): the same shard on every machine and every run
while N stays the same, whatever the inventory's order or Python's hash seed.

>>> shard = Shard.parse("1/4")
>>> shard, [name for name in ("gpu-a", "gpu-b", "gpu-c", "gpu-d") if shard.holds(name)]
(Shard(index=1, count=4), ['gpu-a', 'gpu-c', 'gpu-d'])
>>> Shard.parse("4/4")
Traceback (most recent call last):
...
forensics.core.errors.UsageError: --shard: K must be 0..N-1 (shards count from 0, ...), got '4/4'
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from forensics.core.errors import UsageError

_FORM = re.compile(r"(\d{1,6})/(\d{1,6})")


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = _FORM.fullmatch(text.strip())
        if match is None:
            raise UsageError(f"--shard: expected K/N such as 0/4, got {text!r}")
        index, count = int(match[1]), int(match[2])
        if count < 1:
            raise UsageError(f"--shard: N must be at least 1, got {text!r}")
        if index >= count:
            raise UsageError(
                "--shard: K must be 0..N-1 (shards count from 0, as $JOB_COMPLETION_INDEX "
                f"does), got {text!r}"
            )
        return cls(index, count)

    def holds(self, host_name: str) -> bool:
        return shard_of(host_name, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(host_name: str, count: int) -> int:
    """The shard of ``host_name`` among ``count``: stable across runs and machines."""
    digest = hashlib.sha256(host_name.encode()).digest()
    return int.from_bytes(digest[:8], "big") % count
