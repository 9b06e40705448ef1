"""All facts of one host, one field per probe; a probe that did not run leaves None."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from probes.cgroup import CgroupFacts
from probes.memory import MemoryFacts
from probes.system import SystemFacts


class Facts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system: SystemFacts | None = None
    cgroup: CgroupFacts | None = None
    memory: MemoryFacts | None = None
