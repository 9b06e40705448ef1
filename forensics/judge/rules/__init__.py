"""Rules that need more than one probe's facts, one module per question they answer.

Each module here declares its rules in ``RULES`` (``(Facts, RuleContext) -> findings``);
``CROSS_RULES`` collects them all, so a new question is one new module. A probe's own
judgements live with the probe (``Probe.rules``, ``probes/<name>_rules.py``).
"""

from __future__ import annotations

import importlib
import pkgutil

from forensics.core.facts import CrossRule


def discover(package: str, path: list[str]) -> tuple[CrossRule, ...]:
    """Every rule in the ``RULES`` of the modules of ``package``, module by module.

    >>> [rule.__name__ for rule in discover(__name__, __path__)][:2]
    ['section_problems', 'gpu_errors']
    """
    rules: list[CrossRule] = []
    for module_info in sorted(pkgutil.iter_modules(path), key=lambda info: info.name):
        module = importlib.import_module(f"{package}.{module_info.name}")
        rules += module.RULES
    return tuple(rules)


CROSS_RULES: tuple[CrossRule, ...] = discover(__name__, __path__)
