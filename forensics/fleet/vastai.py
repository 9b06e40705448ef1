"""Turn ``vastai show instances --raw`` JSON into inventory entries (YAML text to merge).

The JSON comes from other people's instances: labels are data, emitted by PyYAML and never
pasted into YAML text; every port is checked to be 1..65535 after any arithmetic.

The endpoint is chosen as the vast.ai CLI's own ``ssh-url`` does: the direct public IP and
its mapped port when ``ports["22/tcp"]`` exists, else the proxy ``ssh_host:ssh_port``, one
port higher for jupyter launch modes. ``HostPort`` is a string; every field may be missing
or null. Secret-bearing fields (``extra_env``, ``onstart``, ``jupyter_token``) are never
read, so they cannot leak into the output.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from forensics.core.errors import UsageError


@dataclass(frozen=True)
class VastHost:
    name: str
    host: str
    port: int
    tags: tuple[str, ...]
    proxy: str | None = None  # the proxy endpoint, kept as a comment when SSH is direct


@dataclass(frozen=True)
class Skipped:
    instance: str
    reason: str


def parse_instances(text: str) -> tuple[list[VastHost], list[Skipped]]:
    """Read the CLI's JSON: a list of instance rows, one row, or ``{"instances": [...]}``.

    >>> rows = '''[{"id": 4242, "label": "prover a", "ssh_host": "ssh4.vast.ai",
    ...   "ssh_port": 31874, "image_runtype": "ssh", "gpu_name": "RTX 4090", "num_gpus": 2,
    ...   "actual_status": "running", "public_ipaddr": "203.0.113.7",
    ...   "ports": {"22/tcp": [{"HostIp": "0.0.0.0", "HostPort": "40022"}]}},
    ...  {"id": 77, "ssh_host": "ssh7.vast.ai", "ssh_port": 20000, "image_runtype": "jupyter"}]'''
    >>> hosts, skipped = parse_instances(rows)
    >>> for h in hosts: print(h.name, h.host, h.port, h.proxy)
    prover-a 203.0.113.7 40022 ssh4.vast.ai:31874
    vast-77 ssh7.vast.ai 20001 None
    >>> hosts[0].tags
    ('vast', 'vast-id-4242', 'RTX_4090', 'gpus-2', 'running')
    """
    try:
        data = json.loads(text)
    except ValueError as error:
        raise UsageError(f"not JSON from `vastai show instances --raw`: {error}") from error
    if isinstance(data, dict) and isinstance(data.get("instances"), list):
        rows: list[Any] = data["instances"]
    elif isinstance(data, dict):
        rows = [data]
    elif isinstance(data, list):
        rows = data
    else:
        raise UsageError("expected a JSON list of instances from `vastai show instances --raw`")
    hosts: list[VastHost] = []
    skipped: list[Skipped] = []
    names: set[str] = set()
    for position, row in enumerate(rows):
        if not isinstance(row, dict):
            skipped.append(Skipped(f"#{position}", "not an instance object"))
            continue
        host = _host(row, names)
        if isinstance(host, Skipped):
            skipped.append(host)
        else:
            names.add(host.name)
            hosts.append(host)
    return hosts, skipped


def _host(row: dict[str, Any], taken: set[str]) -> VastHost | Skipped:
    instance_id = _text(row.get("id"))
    label = _text(row.get("label"))
    who = f"instance {instance_id or '?'}" + (f" ({label})" if label else "")
    proxy_host = _address(row.get("ssh_host"))
    proxy_port = _integer(row.get("ssh_port"))
    if proxy_port is not None and "jupyter" in (_text(row.get("image_runtype")) or ""):
        proxy_port = _integer(proxy_port + 1)  # jupyter's SSH is one port higher, if any
    proxy = f"{proxy_host}:{proxy_port}" if proxy_host and proxy_port else None
    direct_host = _address(row.get("public_ipaddr"))
    direct_port = _direct_port(row.get("ports"))
    if direct_host and direct_port:
        host, port = direct_host, direct_port
    elif proxy_host and proxy_port:
        host, port, proxy = proxy_host, proxy_port, None
    else:
        return Skipped(who, "no SSH endpoint (no ports['22/tcp'] and no ssh_host/ssh_port)")
    base = _word(label, "-") or (f"vast-{instance_id}" if instance_id else f"vast-{host}-{port}")
    name = base if base not in taken else f"{base}-{instance_id or port}"
    status = _text(row.get("actual_status"))
    gpu = _text(row.get("gpu_name"))
    gpus = _integer(row.get("num_gpus"))
    tags = ["vast"]
    if instance_id:
        tags.append(f"vast-id-{instance_id}")
    if gpu:
        tags.append(_word(gpu, "_") or "gpu")
    if gpus:
        tags.append(f"gpus-{gpus}")
    if status:
        tags.append(_word(status, "_") or "status-unknown")
    return VastHost(name=name, host=host, port=port, tags=tuple(tags), proxy=proxy)


def _address(value: object) -> str | None:
    text = _text(value)
    return text if text is not None and re.fullmatch(r"[A-Za-z0-9.:_-]+", text) else None


def _text(value: object) -> str | None:
    if value is None or isinstance(value, dict | list | bool):
        return None
    text = str(value).strip()
    return text or None


def _integer(value: object) -> int | None:
    text = _text(value)
    if text is None or not text.isdigit() or not 1 <= int(text) <= 65535:
        return None
    return int(text)


def _direct_port(ports: object) -> int | None:
    if not isinstance(ports, dict):
        return None
    mappings = ports.get("22/tcp")
    if not isinstance(mappings, list):
        return None
    for mapping in mappings:
        if isinstance(mapping, dict):
            port = _integer(mapping.get("HostPort"))
            if port is not None:
                return port
    return None


def _word(text: str | None, joiner: str) -> str | None:
    """``text`` as one inventory word (names and tags have no spaces or slashes).

    >>> _word("prover a/1", "-"), _word("RTX 4090", "_"), _word("  ", "-"), _word("ünï", "-")
    ('prover-a-1', 'RTX_4090', None, 'ünï')
    """
    if text is None:
        return None
    return re.sub(r"[\s/]+", joiner, text.strip()).strip(joiner) or None


def to_yaml(hosts: list[VastHost]) -> str:
    """Inventory YAML for ``hosts``, written by PyYAML's emitter: every label, address and
    tag is a quoted scalar whatever it holds, so no label can add a key, a host or a
    comment. The only text not emitted from data is the first comment, a count.

    >>> print(to_yaml([VastHost("a", "ssh4.vast.ai", 31874, ("vast",))]), end="")
    # 1 instance from `vastai show instances --raw`; paste under `hosts:` or a group's `hosts:`
    hosts:
    - name: a
      host: ssh4.vast.ai
      port: 31874
      user: root
      tags:
      - vast
    >>> label = "x\\ndefaults:\\n  proxy_jump: root@attacker.example #"
    >>> print(to_yaml([VastHost(label, "h", 22, ())]).splitlines()[2])
    - name: "x\\ndefaults:\\n  proxy_jump: root@attacker.example #"
    """
    count = f"{len(hosts)} instance{'s' if len(hosts) != 1 else ''}"
    header = (
        f"# {count} from `vastai show instances --raw`; "
        "paste under `hosts:` or a group's `hosts:`\n"
    )
    entries = [
        {
            "name": host.name,
            "host": host.host,
            "port": host.port,
            "user": "root",
            "tags": list(host.tags),
        }
        for host in hosts
    ]
    body = yaml.safe_dump(
        {"hosts": entries},
        sort_keys=False,
        allow_unicode=False,
        default_flow_style=False,
        width=1 << 16,
    )
    return header + body


def notes(hosts: list[VastHost], skipped: list[Skipped]) -> list[str]:
    """What the operator should know beside the YAML (printed on stderr, not in the file).

    >>> for note in notes([VastHost("a", "203.0.113.7", 40022, (), proxy="ssh4.vast.ai:31874")],
    ...                   [Skipped("instance 79", "no SSH endpoint")]):
    ...     print(note)
    a: direct SSH; the vast.ai proxy endpoint is ssh4.vast.ai:31874
    skipped instance 79: no SSH endpoint
    """
    said = [
        f"{host.name}: direct SSH; the vast.ai proxy endpoint is {host.proxy}"
        for host in hosts
        if host.proxy
    ]
    return said + [f"skipped {item.instance}: {item.reason}" for item in skipped]
