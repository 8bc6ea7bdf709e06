"""Built-in checks by name for declarative suites (`{contains: Paris}`, `{contains: {value:
paris, ignore_case: true}}`), validated from each check's own signature so no second
validator drifts (the JSON schema comes from the same types): `Check` reads as a nested
check spec, `Sequence` as a list, `Declared(...)` where the type is not what YAML writes.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union, get_args, get_origin

import pydantic

from tui_eval.checks import combinators, conversations, expected, judge, matchers
from tui_eval.checks.base import Check, Declared
from tui_eval.checks.choice import choice
from tui_eval.util.errors import TuiEvalError

BUILT_IN_CHECKS: tuple[type, ...] = (
    matchers.contains, matchers.not_contains, matchers.regex, matchers.equals, matchers.matches,
    expected.equals_expected, expected.matches_expected, expected.stop_reason,
    matchers.is_instance, choice, matchers.tool_called, matchers.tool_not_called,
    matchers.tool_sequence, matchers.max_turns, matchers.max_tokens, matchers.max_latency,
    matchers.no_error, judge.llm_judge, combinators.all_of, combinators.any_of,
    combinators.weighted, conversations.state_equals, conversations.goal_reached,
    conversations.every_turn, conversations.at_turn,
)  # fmt: skip
"""Every check a declarative suite can name (by its class name)."""

_STRICT = pydantic.ConfigDict(extra="forbid")
_list: Any = list  # subscripted with types known only at run time
_dict: Any = dict

if TYPE_CHECKING:
    CheckSpec: TypeAlias = Any


class CheckSpecError(TuiEvalError, ValueError):
    """A declarative check could not be built; the message names the check."""


class WeightedItem(pydantic.BaseModel):
    """One check of a declarative `weighted`, with its weight."""

    model_config = _STRICT

    check: CheckSpec
    weight: float = pydantic.Field(1.0, ge=0)


@dataclass(frozen=True, slots=True)
class _Parameter:
    name: str
    key: str
    """The YAML key (the parameter's name unless `Declared(key=...)` says otherwise)."""
    kind: inspect._ParameterKind
    type: Any
    required: bool
    default: Any


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    factory: type
    parameters: tuple[_Parameter, ...]
    arguments: type[pydantic.BaseModel]
    shorthand: _Parameter | None
    """The parameter the short form (`{contains: Paris}`) fills; None: it takes none."""
    mapping_form: bool
    """Whether `{check: {param: value, ...}}` is accepted (not when the short form takes
    any value, as in `equals`: a mapping is then the value itself)."""


def _evaluate(annotation: Any, factory: type) -> Any:
    """A string annotation evaluated in the check's module, `Check` as a nested check spec."""
    if not isinstance(annotation, str):
        return annotation
    namespace = {**vars(sys.modules[factory.__module__]), "Check": "CheckSpec"}
    namespace["WeightedItem"] = "WeightedItem"
    return eval(annotation, namespace)


def _declarative(annotation: Any) -> Any:
    """Abstract container types as the concrete ones YAML gives (a list, a mapping)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Sequence, Iterable) and len(args) == 1:
        return _list[args[0]]
    if origin is Mapping and len(args) == 2:
        return _dict[args[0], args[1]]
    return annotation


def _parameter(factory: type, parameter: inspect.Parameter) -> _Parameter:
    """One parameter's YAML key and type, read from its annotation."""
    annotation = parameter.annotation
    annotation = Any if annotation is inspect.Parameter.empty else _evaluate(annotation, factory)
    key = parameter.name
    if get_origin(annotation) is Annotated:
        base, *extras = get_args(annotation)
        declared = next((e for e in extras if isinstance(e, Declared)), None)
        if declared is not None:
            annotation = _declarative(_evaluate(declared.type, factory))
            key = declared.key or key
        else:  # constraints such as Field(ge=0, le=1) stay
            annotation = Annotated[(_declarative(base), *extras)]
    else:
        annotation = _declarative(annotation)
    default = parameter.default
    if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
        annotation = _list[annotation]
    elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
        annotation, default = _dict[str, annotation], {}
    required = default is inspect.Parameter.empty
    return _Parameter(parameter.name, key, parameter.kind, annotation, required, default)


def _entry(factory: type) -> _Entry:
    parameters = tuple(
        _parameter(factory, p) for p in inspect.signature(factory).parameters.values()
    )
    fields: dict[str, Any] = {}
    for p in parameters:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            fields[p.key] = (p.type, pydantic.Field(min_length=1))
        else:
            fields[p.key] = (p.type, ... if p.required else p.default)
    arguments = pydantic.create_model(
        f"{factory.__name__}_arguments", __config__=_STRICT, __module__=__name__, **fields
    )
    required = [p for p in parameters if p.required]
    shorthand = required[0] if required else None
    takes_anything = shorthand is not None and shorthand.type is Any
    return _Entry(factory.__name__, factory, parameters, arguments, shorthand, not takes_anything)


def _one_key(value: Any) -> Any:
    if isinstance(value, pydantic.BaseModel):
        return value
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError(
            "a check is a mapping with one key naming a built-in check, such as {contains: Paris}"
        )
    (name,) = value
    if name not in _ENTRIES:
        raise ValueError(f"unknown check {name!r}; known: {', '.join(check_names())}")
    return value


def _tag(value: Any) -> str | None:
    if isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value)))
    (name,) = type(value).model_fields  # an already validated spec
    return str(name)


def _listed(value: Any) -> Any:
    """One item where a list of them is wanted, as that list."""
    return value if isinstance(value, list) else [value]


def _build() -> tuple[dict[str, _Entry], Any]:
    entries = {factory.__name__: _entry(factory) for factory in BUILT_IN_CHECKS}
    union: Any = Union
    members = []
    for name, entry in entries.items():
        if entry.shorthand is None:
            short: Any = Literal[True] | None  # `no_error: true` (or nothing)
        elif entry.shorthand.kind is inspect.Parameter.VAR_POSITIONAL:
            # `stop_reason: stop` as well as `stop_reason: [stop, length]`.
            short = Annotated[entry.shorthand.type, pydantic.BeforeValidator(_listed)]
        else:
            short = entry.shorthand.type
        value_type = union[short, entry.arguments] if entry.mapping_form else short
        model = pydantic.create_model(  # type: ignore[call-overload]
            f"{name}_check",
            __config__=_STRICT,
            __module__=__name__,
            __doc__=(inspect.getdoc(entry.factory) or name).split("\n\n")[0],
            **{name: (value_type, ...)},
        )
        members.append(Annotated[model, pydantic.Tag(name)])
    spec: Any = Annotated[
        union[tuple(members)],
        pydantic.Discriminator(_tag),
        pydantic.BeforeValidator(_one_key),
    ]
    namespace = {"CheckSpec": spec, "WeightedItem": WeightedItem}
    WeightedItem.model_rebuild(_types_namespace=namespace)
    for entry in entries.values():
        entry.arguments.model_rebuild(_types_namespace=namespace)
    for member in members:
        get_args(member)[0].model_rebuild(_types_namespace=namespace)
    return entries, spec


_ENTRIES, _SPEC = _build()
if not TYPE_CHECKING:
    CheckSpec = _SPEC
    """The declarative form of any built-in check (use it as a pydantic type)."""


def check_names() -> list[str]:
    """The names declarative suites can use."""
    return sorted(_ENTRIES)


def build_check(spec: Any, *, defaults: Mapping[str, Mapping[str, Any]] | None = None) -> Check:
    """The check a validated `CheckSpec` describes; `defaults` (per check name) fill the
    arguments it leaves unset (a suite's `judge_model` for `llm_judge`).

    Raises:
        CheckSpecError: the check rejected its arguments (for example, a bad regex).
    """
    (name,) = type(spec).model_fields
    value = getattr(spec, name)
    entry = _ENTRIES[name]
    given: dict[str, Any] = dict((defaults or {}).get(name, {}))
    if isinstance(value, entry.arguments):  # the mapping form (else a short form's value)
        given.update({key: getattr(value, key) for key in value.model_fields_set})
    elif entry.shorthand is not None:
        given[entry.shorthand.key] = value
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for parameter in entry.parameters:
        if parameter.key not in given:
            continue
        argument = _to_python(given[parameter.key], defaults)
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            args.extend(argument)
        elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
            kwargs.update(argument)
        elif parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            args.append(argument)
        else:
            kwargs[parameter.name] = argument
    try:
        check: Check = entry.factory(*args, **kwargs)
    except (ValueError, TypeError, re.error) as exc:
        raise CheckSpecError(f"{name}: {exc}") from None
    return check


def _to_python(value: Any, defaults: Any) -> Any:
    """Nested check specs as checks, other models as tuples (`WeightedItem`: `(check, w)`)."""
    if isinstance(value, list):
        return [_to_python(item, defaults) for item in value]
    if isinstance(value, pydantic.BaseModel):
        if type(value).__name__.endswith("_check"):
            return build_check(value, defaults=defaults)
        return tuple(_to_python(getattr(value, key), defaults) for key in type(value).model_fields)
    return value
