"""How an option is declared once and read from every place an operator can set it.

An option is a field of a declaring model (``SshOptions``, ``CollectOptions`` in
``core/models.py``): its name, type, default, range and help are the field's. The command
line (``cli/options.py``), the inventory (``fleet/inventory.py``) and the manifest all use
that name and read values through ``read_declared``, so a value is checked in one place
and a problem reads the same wherever it was typed.

Checks of what an operator may *ask* for (a log path the host cannot resolve, a warning
threshold above its critical one) run on operator input only, marked by
``OPERATOR_INPUT``: a manifest is a record and is read back as it was written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError, ValidationInfo
from pydantic_core import ErrorDetails

OPERATOR_INPUT = {"operator_input": True}

Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class CommandLine:
    """How a declared option is spelled on the command line besides ``--its-name`` (a
    field that holds many values is a repeatable flag named in the singular). ``flag``
    replaces ``--its-name`` where the name alone would be ambiguous on a command line
    (``tickets: {on: critical}`` in an inventory is ``--ticket-on critical``)."""

    metavar: str | None = None
    short: str | None = None
    old_spelling: str | None = None
    flag: str | None = None


def from_operator(info: ValidationInfo) -> bool:
    """True when the value being validated was typed by an operator (not read back)."""
    return isinstance(info.context, Mapping) and bool(info.context.get("operator_input"))


class DeclaredProblem(ValueError):
    """One value that its declaration refuses: ``where`` is the path inside the values
    read (field name first), ``problem`` what is wrong, in words."""

    def __init__(self, where: tuple[str | int, ...], problem: str) -> None:
        super().__init__(f"{'.'.join(str(part) for part in where)}: {problem}")
        self.where = where
        self.problem = problem


def read_declared(model: type[Model], values: Mapping[str, Any]) -> Model:
    """``model`` from operator input; ``DeclaredProblem`` for the first value it refuses.

    >>> from forensics.core.models import CollectOptions
    >>> read_declared(CollectOptions, {"log_lines": "20", "gpu_timeout": "1m"}).gpu_timeout
    60.0
    >>> read_declared(CollectOptions, {"gpu_timeout": "nan"})
    Traceback (most recent call last):
    ...
    forensics.core.declared.DeclaredProblem: gpu_timeout: 'nan' is not a duration: write e.g. ...
    """
    try:
        return model.model_validate(values, context=OPERATOR_INPUT)
    except ValidationError as error:
        detail = error.errors()[0]
        where = tuple(detail["loc"])
        problem = problem_words(detail)
        inside = model.model_fields[str(where[0])].annotation if len(where) == 2 else None
        if detail["type"] == "extra_forbidden" and isinstance(inside, type):
            known = ", ".join(getattr(inside, "model_fields", {}))
            problem = f"unknown name; {where[0]} are: {known}"
        raise DeclaredProblem(where, problem) from error


def problem_words(detail: ErrorDetails) -> str:
    """What pydantic found wrong, as a sentence for the operator (the value included).

    >>> from forensics.core.models import MemoryThresholds
    >>> try:
    ...     MemoryThresholds(near_limit_warning_percent=120)
    ... except ValidationError as error:
    ...     problem_words(error.errors()[0])
    'input should be less than or equal to 100, got 120'
    """
    kind = detail["type"]
    if kind == "value_error":
        return str(detail.get("ctx", {}).get("error", detail["msg"]))
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field"
    message = str(detail["msg"])
    return f"{message[0].lower()}{message[1:]}, got {detail['input']!r}"
