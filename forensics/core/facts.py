"""All facts of one host: one field per probe, named after it, derived from the probe list;
a probe that did not run leaves None.

``Facts`` is built from ``forensics.probes.PROBES``, so a new probe's facts appear here (in
the JSON report and its schema) without a line written in this file. Code reads one probe's
facts with the typed ``facts.of(CgroupFacts)``; templates read ``report.facts.cgroup``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, create_model

from forensics.core.models import Finding
from forensics.core.probe import Probe, ProbeFacts, RuleContext
from forensics.probes import PROBES

T = TypeVar("T", bound=ProbeFacts)


class FactsBase(BaseModel):
    """What every ``Facts`` model can do, whatever probes it was built from."""

    model_config = ConfigDict(extra="forbid")

    def of(self, model: type[T]) -> T | None:
        """The facts of the probe whose facts model is ``model``, None when it did not run.

        >>> from forensics.probes.system import SystemFacts
        >>> Facts(system=SystemFacts(hostname="gpu-a")).of(SystemFacts).hostname
        'gpu-a'
        """
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, model):
                return value
        return None


def facts_model(probes: Sequence[Probe[Any]]) -> type[FactsBase]:
    """A ``Facts`` model with one optional field per probe, in the probes' order."""
    fields: dict[str, Any] = {probe.name: (probe.facts_model | None, None) for probe in probes}
    return create_model("Facts", __base__=FactsBase, **fields)


if TYPE_CHECKING:
    Facts = FactsBase
else:
    Facts = facts_model(PROBES)

CrossRule = Callable[[Facts, RuleContext], list[Finding]]
"""A judgement that needs several probes' facts (``forensics/judge/rules/``)."""
