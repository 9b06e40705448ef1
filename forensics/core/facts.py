"""All facts of one host, one field per probe; a probe that did not run leaves None."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from forensics.probes.cgroup import CgroupFacts
from forensics.probes.disk import DiskFacts
from forensics.probes.gpu import GpuFacts
from forensics.probes.kernel_log import KernelLogFacts
from forensics.probes.logs import LogsFacts
from forensics.probes.memory import MemoryFacts
from forensics.probes.processes import ProcessesFacts
from forensics.probes.scripts import ScriptFacts
from forensics.probes.system import SystemFacts


class Facts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system: SystemFacts | None = None
    cgroup: CgroupFacts | None = None
    kernel_log: KernelLogFacts | None = None
    disk: DiskFacts | None = None
    logs: LogsFacts | None = None
    gpu: GpuFacts | None = None
    processes: ProcessesFacts | None = None
    memory: MemoryFacts | None = None
    scripts: ScriptFacts | None = None
