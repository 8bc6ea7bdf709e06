"""The command line as a `RunRequest`: which kind of run, which cases, which settings.

Argument parsing stays in the CLI: the request and its settings know nothing of argparse.
The engine's modules load only when a command runs, so `tui-eval --help` stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui_eval.agents.http.options import ProviderOptions
    from tui_eval.service.request import RunKind, RunRequest

# Flag → `RunSettings` field, for the settings the run commands take.
_SETTING_FLAGS = {
    "concurrency": "concurrency",
    "samples": "samples",
    "fail_fast": "fail_fast",
    "max_cost": "max_cost",
    "cache": "cache",
    "max_samples": "max_samples",
    "count_user_faults": "count_user_faults",
}

_NEGATABLE_FLAGS = frozenset({"count_user_faults"})
"""Flags with a `--no-` form: given as False, they set the setting to False (a plain
on/off flag's False means it was not given)."""


def setting(name: str, parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse `type=` for the run setting `name`: `parse` reads the text, and
    `RunSettings` — the setting's one validator — says whether the value will do."""

    def convert(text: str) -> Any:
        from tui_eval.core.settings import RunSettings, settings_problem

        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        try:
            RunSettings(**{name: value})
        except ValueError as exc:
            raise argparse.ArgumentTypeError(settings_problem(exc)) from None
        return value

    convert.__name__ = name  # argparse names the type in its messages
    return convert


def request_from_args(args: argparse.Namespace, kind: RunKind | None = None) -> RunRequest:
    """The request the command line makes (flags not given are not set).

    Raises:
        ValueError: a flag's value is not valid (a header without a colon).
    """
    from tui_eval.core.settings import RunSettings
    from tui_eval.service.request import PlainRun, RunRequest

    given = {
        field: value
        for flag, field in _SETTING_FLAGS.items()
        if (value := getattr(args, flag, None)) is not None
        and (value is not False or flag in _NEGATABLE_FLAGS)
    }
    provider = provider_options_from_args(args)
    if provider is not None:
        given["provider"] = provider
    return RunRequest(
        kind=kind or PlainRun(),
        settings=RunSettings(**given),
        filter=getattr(args, "filter", None),
        baseline=getattr(args, "baseline", None),
        save_baseline=bool(getattr(args, "save_baseline", False)),
        executor=getattr(args, "executor", None) or "in-process",
        ray_address=getattr(args, "ray_address", None),
        ray_workers=getattr(args, "ray_workers", None),
    )


def provider_options_from_args(args: argparse.Namespace) -> ProviderOptions | None:
    """`--rpm`, `--tpm`, `--request-timeout`, `--retry-budget`, `--max-retries`,
    `--base-url` and `--header 'Name: value'` as provider options (None when none given).

    Raises:
        ValueError: a header without a colon, with a name that is not a header name, or
            with CR, LF or NUL in its value (the message never shows the value).
    """
    from tui_eval.agents.http.options import ProviderOptions, header_problem

    fields: dict[str, Any] = {}
    for flag, name in (
        ("rpm", "rpm"),
        ("tpm", "tpm"),
        ("request_timeout", "timeout"),
        ("retry_budget", "retry_budget"),
        ("max_retries", "max_retries"),
        ("base_url", "base_url"),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            fields[name] = value
    headers: dict[str, str] = {}
    for raw in getattr(args, "header", None) or []:
        name, sep, value = raw.partition(":")
        if not sep or not name.strip():
            raise ValueError("--header should be 'Name: value' (one was given without a colon)")
        problem = header_problem(name.strip(), value.strip())
        if problem is not None:
            raise ValueError(f"--header: {problem}")
        headers[name.strip()] = value.strip()
    if headers:
        fields["headers"] = headers
    return ProviderOptions(**fields) if fields else None


__all__ = ["provider_options_from_args", "request_from_args", "setting"]
