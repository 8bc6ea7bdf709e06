"""Model providers and the one registry that resolves spec strings to them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import parse_qsl

from tui_eval.agents.providers.base import ModelSpecError, Provider, ProviderError, ToolDef

if TYPE_CHECKING:
    from tui_eval.agents.http.options import ProviderOptions

ModelLike: TypeAlias = Provider | str | Callable[[], Provider]
"""A provider, a spec string (`"openai:gpt-4o-mini"`), or a zero-arg factory of providers."""

# prefix -> "module:function" taking the part after the prefix; imported only when used.
_REGISTRY: dict[str, str | Callable[[str], Provider]] = {
    "openai": "tui_eval.agents.providers.openai:from_spec",
    "openai-compatible": "tui_eval.agents.providers.openai:from_compatible_spec",
    "anthropic": "tui_eval.agents.providers.anthropic:from_spec",
    "python": "tui_eval.agents.providers:from_python_spec",
}


def register_provider(prefix: str, target: str | Callable[[str], Provider]) -> None:
    """Make `prefix:REST` spec strings resolve through `target(REST)`."""
    _REGISTRY[prefix] = target


def known_prefixes() -> list[str]:
    """The provider prefixes a model spec can start with (`openai`, `anthropic`, ...)."""
    return sorted(_REGISTRY)


def resolve_model(model: ModelLike) -> Provider:
    """A provider, spec string or provider factory as a provider (else `ModelSpecError`)."""
    if isinstance(model, str):
        return resolve_spec(model)
    if hasattr(model, "complete"):
        return model
    if callable(model):
        built = model()
        if not hasattr(built, "complete"):
            raise ModelSpecError(
                f"model factory {model!r} returned {built!r}, which is not a provider"
            )
        return built
    raise ModelSpecError(
        f"not a model: {model!r} (expected a provider, a spec string or a factory)"
    )


def from_python_spec(reference: str) -> Provider:
    """`python:module:attribute`: a provider (or a factory of one) defined in code."""
    return resolve_model(python_target(reference))


def python_target(reference: str) -> Any:
    """What `python:module:attribute` names, not yet built: a provider or a factory."""
    module_name, sep, attr = reference.partition(":")
    if not sep or not module_name or not attr:
        raise ModelSpecError(f"python:{reference} should be python:MODULE:ATTRIBUTE")
    importlib.invalidate_caches()  # the module may have been written after start-up
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelSpecError(f"python:{reference}: cannot import {module_name!r}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ModelSpecError(f"python:{reference}: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    return target


def resolve_spec(spec: str) -> Provider:
    """Resolve `"prefix:model"` through the registry; `ProviderOptions` may follow a `?`
    (`openai:gpt-4o-mini?rpm=600&header.OpenAI-Project=p1`)."""
    spec, has_query, query = spec.partition("?")
    options = None
    if has_query:
        options = _options_of(query, f"{spec}?{query}")
    provider = _resolve_plain(spec)
    if options is not None and not options.is_empty:
        configure = getattr(provider, "configure", None)
        if configure is None:
            raise ModelSpecError(
                f"model spec {spec!r}: options after '?' apply to HTTP providers only"
            )
        configure(options)
    return provider


def _options_of(query: str, spec: str) -> ProviderOptions:
    """Options written after `?` in a model spec (`header.NAME=value` adds a header)."""
    import pydantic

    from tui_eval.agents.http.options import ProviderOptions

    fields: dict[str, Any] = {}
    headers: dict[str, str] = {}
    known = [name for name in ProviderOptions.model_fields if name != "headers"]
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name == "api-version":
            name = "api_version"
        if name.startswith("header."):
            headers[name.removeprefix("header.")] = value
        elif name in known:
            fields[name] = value
        else:
            raise ModelSpecError(
                f"model spec {spec!r}: unknown option {name!r}; known: "
                f"{', '.join([*known, 'header.NAME'])}"
            )
    try:
        return ProviderOptions(**fields, headers=headers)
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ModelSpecError(f"model spec {spec!r}: {problems}") from None


def _resolve_plain(spec: str) -> Provider:
    prefix, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ModelSpecError(
            f"model spec {spec!r} has no provider prefix; write it as PREFIX:MODEL with PREFIX one of "
            f"{', '.join(sorted(_REGISTRY))}"
        )
    target: Any = _REGISTRY.get(prefix)
    if target is None:
        raise ModelSpecError(
            f"unknown model provider {prefix!r} in {spec!r}; known: {', '.join(sorted(_REGISTRY))}"
        )
    if isinstance(target, str):
        module_name, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module_name), attr)
    provider: Provider = target(rest)
    return provider


__all__ = [
    "ModelLike",
    "ModelSpecError",
    "Provider",
    "ProviderError",
    "ToolDef",
    "register_provider",
    "resolve_model",
    "resolve_spec",
]
