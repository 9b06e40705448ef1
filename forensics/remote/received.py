"""What a host sends, kept up to a cap: the tool's memory stays bounded whatever comes."""

from __future__ import annotations

from dataclasses import dataclass, field

from forensics.core.models import HostStream


@dataclass
class Received:
    """One stream of a run: the first ``cap`` bytes kept, every byte counted.

    >>> stream = Received(cap=4)
    >>> stream.take(b"abc"); stream.take(b"defg")
    >>> bytes(stream.kept), stream.over, stream.record().bytes_received
    (b'abcd', True, 7)
    """

    cap: int
    kept: bytearray = field(default_factory=bytearray)
    total: int = 0

    def take(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += data[:room]

    @property
    def over(self) -> bool:
        return self.total > self.cap

    def record(self) -> HostStream:
        return HostStream(
            bytes_received=self.total, bytes_kept=len(self.kept), cap=self.cap, truncated=self.over
        )
