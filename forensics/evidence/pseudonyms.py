"""Stable pseudonyms for host names and IP addresses in a pack (``pack --obfuscate-hosts``).

Within one pack the same name or address always becomes the same pseudonym (``host-1``,
``ipv4-1``, ``ipv6-1``, numbered in order of first appearance); a pseudonym is never mapped
again, so packing a packed bundle changes nothing. Loopback and unspecified addresses
identify nothing and stay. The map goes to a separate file, never into the archive.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

_IPV4 = re.compile(
    r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
    r"(?!\.?\w)"
)
# Candidates only; ``ipaddress`` decides. A time (12:34:56) or a MAC address has no "::" and
# fewer than seven colons, so it never qualifies.
_IPV6 = re.compile(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:.])")
PSEUDONYM = re.compile(r"^(?:host|ipv4|ipv6)-\d+$")


class HostPseudonyms:
    """Replace known host names and every IP address with pseudonyms.

    >>> names = HostPseudonyms(["gpu-a.example.net", "gpu-a"])
    >>> names.apply("ssh root@gpu-a.example.net (10.1.2.3); gpu-a says 10.1.2.3 and 127.0.0.1")
    'ssh root@host-1 (ipv4-1); host-2 says ipv4-1 and 127.0.0.1'
    >>> names.apply("fe80::1c2:ff:fe00:1 at 12:34:56, gpu-ab stays")
    'ipv6-1 at 12:34:56, gpu-ab stays'
    >>> names.mapping()["hosts"]
    {'gpu-a.example.net': 'host-1', 'gpu-a': 'host-2'}
    """

    def __init__(self, host_names: Iterable[str]) -> None:
        self._map: dict[str, dict[str, str]] = {"hosts": {}, "ipv4": {}, "ipv6": {}}
        wanted = {
            name
            for name in host_names
            if name and not PSEUDONYM.match(name) and name not in ("local", "localhost")
        }
        for name in sorted(wanted, key=lambda n: (-len(n), n)):
            self._pseudonym("hosts", name)
        self._names = (
            re.compile(
                r"(?<![\w.-])(?:"
                + "|".join(re.escape(name) for name in sorted(wanted, key=lambda n: -len(n)))
                + r")(?![\w-]|\.\w)"
            )
            if wanted
            else None
        )

    def apply(self, text: str) -> str:
        if self._names is not None:
            text = self._names.sub(lambda m: self._map["hosts"][m.group(0)], text)
        text = _IPV4.sub(lambda m: self._address(m.group(0), "ipv4"), text)
        return _IPV6.sub(lambda m: self._address(m.group(0), "ipv6"), text)

    def mapping(self) -> dict[str, dict[str, str]]:
        """Original -> pseudonym, by kind; only what was seen (host names: all known)."""
        return {kind: dict(entries) for kind, entries in self._map.items()}

    def _address(self, text: str, kind: str) -> str:
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            return text
        if address.is_loopback or address.is_unspecified:
            return text
        if kind == "ipv6" and sum(1 for part in text.split(":") if part) < 2:
            return text
        return self._pseudonym(kind, text)

    def _pseudonym(self, kind: str, original: str) -> str:
        entries = self._map[kind]
        if original not in entries:
            prefix = "host" if kind == "hosts" else kind
            entries[original] = f"{prefix}-{len(entries) + 1}"
        return entries[original]
