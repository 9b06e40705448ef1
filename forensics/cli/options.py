"""Command-line options derived from their one declaration (``core/declared.py``).

``@declared_options(SshOptions, CollectOptions)`` adds to a command one ``--option`` per
field of each model: ``--field-name`` (a field that holds many values, a list or a
mapping, is a repeatable flag in the singular: ``logs`` is ``--log``), the field's
description as help, its default shown. The command receives what the operator typed as
``given`` and builds the models with ``given.read(Model)``, which checks every value
where it is declared and turns a refusal into one line naming the flag.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import annotated_types
import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from forensics.core.declared import CommandLine, DeclaredProblem, read_declared
from forensics.core.errors import UsageError
from forensics.core.units import UnitError, parse_duration

Model = TypeVar("Model", bound=BaseModel)
Command = Callable[..., None]


@dataclass(frozen=True)
class Given:
    """The declared options the operator typed, by field name (absent: not typed)."""

    values: Mapping[str, Any] = field(default_factory=dict)
    flags: Mapping[str, str] = field(default_factory=dict)

    def read(self, model: type[Model]) -> Model:
        """``model`` from the typed values of its fields; ``UsageError`` naming the flag
        for the first value its declaration refuses."""
        values = {name: self.values[name] for name in model.model_fields if name in self.values}
        try:
            return read_declared(model, values)
        except DeclaredProblem as problem:
            if not problem.where:  # the model as a whole: a combination of options
                raise UsageError(problem.problem) from problem
            name = str(problem.where[0])
            flag = self.flags.get(name, f"--{name.replace('_', '-')}")
            inner = [str(part) for part in problem.where[1:] if isinstance(part, str)]
            shown = f" {'.'.join(inner)}" if inner else ""
            raise UsageError(f"{flag}{shown}: {problem.problem}") from problem


def flag_of(name: str, info: FieldInfo) -> str:
    """The command-line flag of a declared field.

    >>> from forensics.core.models import CollectOptions
    >>> [flag_of(n, f) for n, f in CollectOptions.model_fields.items()][:4]
    ['--timeout', '--probe', '--focus', '--log']
    >>> from forensics.core.ticket_settings import TicketSettings
    >>> flag_of("on", TicketSettings.model_fields["on"])
    '--ticket-on'
    """
    if (flag := _spelling(info).flag) is not None:
        return flag
    spelled = name.replace("_", "-")
    return f"--{spelled[:-1]}" if _many(info) and spelled.endswith("s") else f"--{spelled}"


def declared_options(
    *models: type[BaseModel],
    only: Sequence[str] | None = None,
    more_help: Mapping[str, str] | None = None,
) -> Callable[[Command], Command]:
    """Give the decorated command one option per field of ``models`` (or of those named
    ``only``); it receives them as ``given: Given`` (its last parameter)."""

    def decorate(command: Command) -> Command:
        hints = typing.get_type_hints(command, include_extras=True)
        own = [
            parameter.replace(annotation=hints[parameter.name])
            for parameter in inspect.signature(command).parameters.values()
            if parameter.name != "given"
        ]
        declared = {
            name: info
            for model in models
            for name, info in model.model_fields.items()
            if only is None or name in only
        }
        added = [
            _parameter(name, info, (more_help or {}).get(name)) for name, info in declared.items()
        ]
        flags = {name: flag_of(name, info) for name, info in declared.items()}
        parameters = {name: _parameter_name(name, info) for name, info in declared.items()}

        @functools.wraps(command)
        def run(**arguments: Any) -> None:
            typed = {name: arguments.pop(parameters[name]) for name in declared}
            values = {
                name: _value(flags[name], info, typed[name])
                for name, info in declared.items()
                if typed[name] not in (None, False, [])
            }
            command(**arguments, given=Given(values, flags))

        signature = inspect.Signature([*own, *added])
        run.__signature__ = signature  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        return run

    return decorate


def _parameter(name: str, info: FieldInfo, more_help: str | None) -> inspect.Parameter:
    spelling = _spelling(info)
    flag = flag_of(name, info)
    names = [flag, *(n for n in (spelling.short, spelling.old_spelling) if n is not None)]
    parts = (info.description, more_help, _range(info), _default(info))
    help_text = " ".join(part for part in parts if part)
    kind: Any
    if info.annotation is bool:
        kind, default = bool, False
        option = typer.Option(*names, help=help_text)
    else:
        kind, default = (list[str] | None) if _many(info) else (str | None), None
        option = typer.Option(*names, help=help_text, metavar=spelling.metavar or _metavar(info))
    return inspect.Parameter(
        _parameter_name(name, info),
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[kind, option],
    )


def _parameter_name(name: str, info: FieldInfo) -> str:
    """The command's parameter: the field's name, or its own flag's (``--ticket-on`` is
    ``ticket_on``, apart from a command's own ``--on``)."""
    flag = _spelling(info).flag
    return flag.removeprefix("--").replace("-", "_") if flag is not None else name


def _value(flag: str, info: FieldInfo, typed: Any) -> Any:
    """What the operator typed, shaped for the declaration: NAME=VALUE pairs of a
    mapping option become a mapping."""
    if not _is_model(info.annotation):
        return typed
    pairs: dict[str, str] = {}
    for pair in typed:
        name, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"{flag} {pair}: expected NAME=VALUE")
        pairs[name.strip()] = value.strip()
    return pairs


def _many(info: FieldInfo) -> bool:
    return typing.get_origin(info.annotation) in (tuple, list) or _is_model(info.annotation)


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _spelling(info: FieldInfo) -> CommandLine:
    spelled = [m for m in info.metadata if isinstance(m, CommandLine)]
    return spelled[-1] if spelled else CommandLine()


def _metavar(info: FieldInfo) -> str:
    return "N" if info.annotation is int else "TEXT"


def _range(info: FieldInfo) -> str | None:
    """The declared bounds in words, and whether the flag repeats."""
    words = [
        f"{word} {getattr(bound, kind.__name__.lower()):g}"
        for bound in info.metadata
        for kind, word in _BOUNDS.items()
        if isinstance(bound, kind)
    ]
    if _many(info):
        words.append("repeatable")
    return f"({', '.join(words)})" if words else None


_BOUNDS = {
    annotated_types.Ge: "at least",
    annotated_types.Gt: "more than",
    annotated_types.Le: "at most",
    annotated_types.Lt: "less than",
}


def _default(info: FieldInfo) -> str | None:
    default = info.get_default(call_default_factory=True)
    if default in (None, False, ()) or _is_model(type(default)):
        return None
    unit = "s" if _spelling(info).metavar == "DURATION" else ""
    return (
        f"[default: {default:g}{unit}]" if isinstance(default, float) else f"[default: {default}]"
    )


def read_duration(flag: str, text: str, *, positive: bool = True) -> float:
    """A duration option of one command (not a declared collection option) in seconds;
    ``UsageError`` naming the flag otherwise.

    >>> read_duration("--every", "1m30s")
    90.0
    >>> read_duration("--grace", "0", positive=False)
    0.0
    >>> read_duration("--timeout", "0")
    Traceback (most recent call last):
    ...
    forensics.core.errors.UsageError: --timeout '0': must be more than 0
    """
    try:
        seconds = parse_duration(text)
    except UnitError as error:
        raise UsageError(f"{flag} {error}") from error
    if positive and seconds <= 0:
        raise UsageError(f"{flag} {text!r}: must be more than 0")
    return seconds
