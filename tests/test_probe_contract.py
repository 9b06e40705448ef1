"""Every probe keeps the contract that lets it be added as one module: a facts model built on
``ProbeFacts`` (so it can say ``unavailable``) and a docstring sample of what the host
returns that runs as a doctest. Its report partials: tests/test_report_sections.py."""

from __future__ import annotations

import doctest
import importlib
import inspect
import sys
from typing import Any

import pytest

from forensics.core.probe import Probe, ProbeFacts
from forensics.probes import PROBES


def _module(probe: Probe[Any]) -> Any:
    return sys.modules[probe.parse.__module__]


@pytest.mark.parametrize("probe", PROBES, ids=lambda probe: probe.name)
def test_the_facts_model_can_say_the_probe_could_not_read(probe: Probe[Any]) -> None:
    assert issubclass(probe.facts_model, ProbeFacts)
    assert "unavailable" in probe.facts_model.model_fields
    assert probe.facts_model(unavailable="section x was not collected").unavailable


@pytest.mark.parametrize("probe", PROBES, ids=lambda probe: probe.name)
def test_the_parser_shows_a_sample_that_runs(probe: Probe[Any]) -> None:
    module = _module(probe)
    finder = doctest.DocTestFinder(exclude_empty=True)
    samples = [
        test
        for owner in (module, probe.parse)
        for test in finder.find(owner, module.__name__, module=module, globs=vars(module))
        if test.examples and test.name in (module.__name__, f"{module.__name__}.parse")
    ]
    assert samples, f"{module.__name__}: neither it nor parse() has a >>> sample"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    for sample in samples:
        runner.run(sample)
    assert runner.summarize(verbose=False).failed == 0
    assert inspect.getdoc(module), f"{module.__name__} has no module docstring"


def test_no_probe_is_listed_by_hand() -> None:
    """The probe list comes from the modules: every PROBE in the package, each once."""
    names = [probe.name for probe in PROBES]
    assert len(names) == len(set(names)) and {"system", "processes", "gpu"} <= set(names)
    assert names == [p.name for p in sorted(PROBES, key=lambda p: (p.run_order, p.name))]


@pytest.mark.parametrize(
    "probe", [p for p in PROBES if p.rules_module], ids=lambda probe: probe.name
)
def test_a_rules_module_named_by_a_probe_exists_and_imports_the_probe(probe: Probe[Any]) -> None:
    assert probe.rules_module == f"{_module(probe).__name__}_rules"
    module = importlib.import_module(str(probe.rules_module))
    assert callable(module.rules)
    assert inspect.signature(module.rules).parameters.keys() == {"facts", "context"}
