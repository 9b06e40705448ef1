"""known_hosts files read as OpenSSH reads them: several files, hashed names, wildcard and
negated patterns, ``[host]:port`` names, ``@revoked`` keys and ``@cert-authority`` lines.

One line per key (sshd(8), "SSH_KNOWN_HOSTS FILE FORMAT")::

    gpu-a.fleet.example,10.0.0.5 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI...
    [ssh6.vast.ai]:17008 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI...
    |1|F1E1KeoE/eEWhi10WpGv4OdiO6Y=|3988QV0VE8wmZL7suNrYQLITLCg= ssh-rsa AAAAB3Nza...
    @revoked * ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ...
    @cert-authority *.fleet.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI...

>>> known = KnownHosts.parse("[gpu-a]:2222 ssh-ed25519 AAAA\\n@revoked * ssh-rsa BBBB\\n", "kh")
>>> known.judge(["[gpu-a]:2222"], "ssh-ed25519", "AAAA").verdict
'known'
>>> known.judge(["[gpu-a]:2222"], "ssh-ed25519", "CCCC").verdict
'changed'
>>> known.judge(["gpu-b"], "ssh-rsa", "BBBB").verdict
'revoked'
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from forensics.remote.ssh_config import wildcard_matches

Verdict = Literal["known", "changed", "revoked", "cert_authority_only", "unknown"]


@dataclass(frozen=True)
class KnownHostLine:
    """One usable line: where it is, its marker, host patterns, key type and key."""

    path: str
    number: int
    marker: str | None
    patterns: tuple[str, ...]
    key_type: str
    key: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.number}"

    def matches(self, name: str) -> bool:
        """OpenSSH's rule: a hashed entry matches its exact name; otherwise some positive
        pattern matches and no negated one does."""
        if len(self.patterns) == 1 and self.patterns[0].startswith("|1|"):
            return _hashed_matches(self.patterns[0], name)
        matched = False
        for pattern in self.patterns:
            negated = pattern.startswith("!")
            if wildcard_matches(name, pattern[1:] if negated else pattern):
                if negated:
                    return False
                matched = True
        return matched


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    line: KnownHostLine | None = None
    expected: tuple[KnownHostLine, ...] = ()


@dataclass
class KnownHosts:
    lines: list[KnownHostLine] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str, path: str) -> KnownHosts:
        known = cls(files_read=[path])
        known.lines.extend(_lines(text, path))
        return known

    @classmethod
    def load(cls, paths: list[Path]) -> KnownHosts:
        """Every file that exists, in order; a missing file is not an error (ssh's rule)."""
        known = cls()
        for path in paths:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except FileNotFoundError:
                continue
            except OSError as error:
                raise OSError(f"cannot read known_hosts {path} ({error.strerror})") from error
            known.files_read.append(str(path))
            known.lines.extend(_lines(text, str(path)))
        return known

    def judge(self, names: list[str], key_type: str, key: str) -> Judgement:
        """What the lines say of ``key`` presented under any of ``names``."""
        relevant = [line for line in self.lines if any(line.matches(n) for n in names)]
        for line in relevant:
            if line.marker == "revoked" and line.key == key:
                return Judgement("revoked", line)
        plain = [line for line in relevant if line.marker is None]
        for line in plain:
            if line.key_type == key_type and line.key == key:
                return Judgement("known", line)
        same_type = tuple(line for line in plain if line.key_type == key_type)
        if same_type:
            return Judgement("changed", same_type[0], same_type)
        authorities = [line for line in relevant if line.marker == "cert-authority"]
        if authorities and not plain:
            return Judgement("cert_authority_only", authorities[0])
        return Judgement("unknown")


def host_names(hostname: str, port: int, alias: str | None = None) -> list[str]:
    """The name a host's key is filed under: ``HostKeyAlias`` as written when set (ssh
    adds no port to an alias), else the host, as ``[host]:port`` when the port is not 22.

    >>> host_names("gpu-a", 2222), host_names("gpu-a", 2222, alias="prover-a")
    (['[gpu-a]:2222'], ['prover-a'])
    """
    if alias:
        return [alias]
    return [hostname if port == 22 else f"[{hostname}]:{port}"]


@functools.lru_cache(maxsize=8)
def _lines(text: str, path: str) -> tuple[KnownHostLine, ...]:
    """The usable lines of one file's text. Every host of a sweep reads the same file:
    parsed once per content, not once per host (a fleet's file has a line per host)."""
    found = []
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.split()
        if not words or words[0].startswith("#"):
            continue
        marker = None
        if words[0].startswith("@"):
            marker = words[0][1:].lower()
            words = words[1:]
        if len(words) < 3:
            continue
        found.append(
            KnownHostLine(
                path=path,
                number=number,
                marker=marker,
                patterns=tuple(words[0].split(",")),
                key_type=words[1],
                key=words[2],
            )
        )
    return tuple(found)


def _hashed_matches(entry: str, name: str) -> bool:
    parts = entry.split("|")
    if len(parts) != 4:
        return False
    try:
        salt = base64.b64decode(parts[2])
        expected = base64.b64decode(parts[3])
    except (binascii.Error, ValueError):
        return False
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return hmac.compare_digest(digest, expected)


def hashed_name(name: str, salt: bytes) -> str:
    """A ``|1|salt|hash`` name, as ``ssh-keygen -H`` writes it (used by the tests).

    >>> hashed_name("gpu-a", b"0" * 20).startswith("|1|MDAw")
    True
    """
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"
