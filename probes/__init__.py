"""The probes, in the order their sections run on the host: cheap and fast ones first, so
that a deadline late in the run loses the least."""

from typing import Any

from forensics.core.probe import Probe
from forensics.probes import cgroup, disk, gpu, kernel_log, logs, memory, processes, scripts, system

PROBES: tuple[Probe[Any], ...] = (
    system.PROBE,
    cgroup.PROBE,
    memory.PROBE,
    disk.PROBE,
    logs.PROBE,
    kernel_log.PROBE,
    processes.PROBE,
    scripts.PROBE,
    gpu.PROBE,
)


def by_name(names: tuple[str, ...]) -> tuple[Probe[Any], ...]:
    """The probes named (all when none are); unknown names raise ``KeyError``."""
    if not names:
        return PROBES
    known = {probe.name: probe for probe in PROBES}
    return tuple(known[name] for name in names)
