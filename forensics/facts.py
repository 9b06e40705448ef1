"""All facts of one host, one field per probe; a probe that did not run leaves None."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from probes.scripts import ScriptFacts
from probes.system import SystemFacts


class Facts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system: SystemFacts | None = None
    scripts: ScriptFacts | None = None
