"""The probes: every module of this package that declares ``PROBE``, in the order their
sections run on the host (``Probe.run_order``: cheap and fast ones first, so that a
deadline late in the run loses the least).

Adding a probe is adding a module here (docs/ARCHITECTURE.md, "Adding a probe"); nothing
else lists the probes: the facts container, the report's order, the timeline and the
``--probe`` choices are derived from ``PROBES``.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from forensics.core.probe import Probe


def discover(package: str, path: list[str]) -> tuple[Probe[Any], ...]:
    """Every ``PROBE`` declared by a module of ``package`` (found on ``path``), in run order.

    >>> [probe.name for probe in discover(__name__, __path__)][:3]
    ['system', 'cgroup', 'memory']
    """
    found = []
    for module_info in pkgutil.iter_modules(path):
        module = importlib.import_module(f"{package}.{module_info.name}")
        probe = getattr(module, "PROBE", None)
        if isinstance(probe, Probe):
            found.append(probe)
    names = [probe.name for probe in found]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ValueError(f"two probes are named {', '.join(duplicated)}")
    return tuple(sorted(found, key=lambda probe: (probe.run_order, probe.name)))


PROBES: tuple[Probe[Any], ...] = discover(__name__, __path__)


def by_name(names: tuple[str, ...]) -> tuple[Probe[Any], ...]:
    """The probes named (all when none are); unknown names raise ``KeyError``."""
    if not names:
        return PROBES
    known = {probe.name: probe for probe in PROBES}
    return tuple(known[name] for name in names)
