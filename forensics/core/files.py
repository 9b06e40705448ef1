"""Read a file named by someone else without letting it decide how much is read."""

from __future__ import annotations

import os


def read_bounded(path: os.PathLike[str] | str, limit: int) -> bytes:
    """The bytes of ``path``, refused (``ValueError``) past ``limit`` bytes, so that
    ``/dev/zero`` or a huge file is never read whole.

    >>> read_bounded("/dev/zero", 1024)
    Traceback (most recent call last):
    ...
    ValueError: larger than 1 KiB; refused
    """
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {_size(limit)}; refused")
    return data


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB"
