"""All facts of one host, one field per probe; a probe that did not run leaves None."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from probes.cgroup import CgroupFacts
from probes.disk import DiskFacts
from probes.gpu import GpuFacts
from probes.kernel_log import KernelLogFacts
from probes.logs import LogsFacts
from probes.memory import MemoryFacts
from probes.processes import ProcessesFacts
from probes.scripts import ScriptFacts
from probes.system import SystemFacts


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
