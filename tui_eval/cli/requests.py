"""The command line as a `RunRequest`: which kind of run, which cases, which settings.

Every command that runs suites (`run`, `ab`, `recheck`, and the app's launch) takes its run
settings from the one table here (`add_settings_flags`), and `request_from_args` reads the
same table back: a flag, its help and its `RunSettings` field are written once. Argument
parsing stays in the CLI: the request and its settings know nothing of argparse. The
engine's modules load only when a command runs, so `tui-eval --help` stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui_eval.agents.http.options import ProviderOptions
    from tui_eval.service.request import RunKind, RunRequest


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


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def _positive_float(value: str) -> float:
    number = float(value)
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value}")
    return number


SETTINGS_FLAGS: dict[str, dict[str, Any]] = {
    "concurrency": dict(
        type=setting("concurrency", int), metavar="N", help="cases at once (default: the suite's)"
    ),
    "samples": dict(
        type=setting("samples", int), metavar="N", help="override every case's sample count"
    ),
    "fail_fast": dict(action="store_true", help="run cases one by one, stop at the first failure"),
    "max_samples": dict(
        type=setting("max_samples", int),
        metavar="N",
        help="with --decide and ab: at most N samples per case (and agent) (default 100)",
    ),
    "max_cost": dict(
        type=setting("max_cost", float),
        metavar="USD",
        help="no new sample starts once this many dollars are spent (or in flight); the report "
        "says the run stopped on budget (--decide and ab: the whole decision, both agents "
        "together)",
    ),
    "cache": dict(
        nargs="?",
        const="on",
        choices=["on", "read-only", "off"],
        help="replay stored model responses, keyed by request and sample index "
        "(read-only: never store new ones)",
    ),
    "count_user_faults": dict(
        action=argparse.BooleanOptionalAction,
        default=None,
        help="count the conversations a user simulator failed in pass rates, verdicts and "
        "the exit code, or (--no-...) leave them out (default: the suite's, else left out; "
        "every summary says how many)",
    ),
    "executor": dict(
        choices=["in-process", "ray"],
        help="where samples run: this process (default) or a Ray cluster "
        "(pip install 'tui-eval[ray]'; joins RAY_ADDRESS or --ray-address, else starts one)",
    ),
    "ray_address": dict(metavar="ADDRESS", help="the Ray cluster to join"),
    "ray_workers": dict(type=_positive, metavar="N", help="Ray worker actors (default: its CPUs)"),
}
"""Each run setting's flag (`--max-cost` for `max_cost`), as `add_argument` takes it; the
`RunSettings` field of the same name is where it goes (`executor` and the `ray_` flags
make one `RaySpec`)."""

PROVIDER_FLAGS: dict[str, tuple[str, dict[str, Any]]] = {
    "rpm": (
        "rpm",
        dict(type=_positive_float, metavar="N", help="requests per minute never to exceed"),
    ),
    "tpm": (
        "tpm",
        dict(type=_positive_float, metavar="N", help="tokens per minute never to exceed"),
    ),
    "request_timeout": (
        "timeout",
        dict(type=_positive_float, metavar="S", help="seconds for one request"),
    ),
    "retry_budget": (
        "retry_budget",
        dict(
            type=_positive_float,
            metavar="S",
            help="seconds a request keeps waiting out rate limits with no progress (default 600)",
        ),
    ),
    "max_retries": (
        "max_retries",
        dict(
            type=int,
            metavar="N",
            help="retries after server errors, timeouts and connection errors (default 2)",
        ),
    ),
    "base_url": ("base_url", dict(metavar="URL", help="send every request here (a proxy)")),
}
"""The `provider` setting's flags: flag → (`ProviderOptions` field, `add_argument`'s
keywords); `--header` joins them."""

PLAIN_RUN_ONLY = ("samples", "fail_fast", "executor", "ray_address", "ray_workers")
"""Settings only a plain run takes (`ab` and `recheck` do without)."""


def add_settings_flags(parser: argparse.ArgumentParser, exclude: Iterable[str] = ()) -> None:
    """Add the run settings' flags (all but `exclude`) and the API settings to `parser`."""
    left_out = set(exclude)
    for name, keywords in SETTINGS_FLAGS.items():
        if name not in left_out:
            parser.add_argument("--" + name.replace("_", "-"), **keywords)
    api = parser.add_argument_group(
        "API settings", "for every HTTP provider of the run, judges included; over the suite's"
    )
    for name, (_, keywords) in PROVIDER_FLAGS.items():
        api.add_argument("--" + name.replace("_", "-"), **keywords)
    api.add_argument(
        "--header", action="append", metavar="'NAME: VALUE'", help="an extra request header"
    )


def request_from_args(args: argparse.Namespace) -> RunRequest:
    """The request the command line makes (flags not given are not set): its kind from the
    command (`run --decide`, `ab`, `recheck`), its settings from `SETTINGS_FLAGS`.

    Raises:
        ValueError: a flag's value is not valid (a header without a colon).
    """
    from tui_eval.core.settings import RaySpec, RunSettings
    from tui_eval.service.request import RunRequest

    given = {
        name: value
        for name, keywords in SETTINGS_FLAGS.items()
        if (value := getattr(args, name, None)) is not None
        and (value is not False or keywords.get("action") is argparse.BooleanOptionalAction)
    }
    given.pop("ray_address", None), given.pop("ray_workers", None)
    if given.pop("executor", None) == "ray":
        given["executor"] = RaySpec(address=args.ray_address, workers=args.ray_workers)
    provider = provider_options_from_args(args)
    if provider is not None:
        given["provider"] = provider
    return RunRequest(
        kind=_kind(args),
        settings=RunSettings(**given),
        filter=getattr(args, "filter", None),
        baseline=getattr(args, "baseline", None),
        save_baseline=bool(getattr(args, "save_baseline", False)),
    )


def _kind(args: argparse.Namespace) -> RunKind:
    """The kind of run a command asks for."""
    from tui_eval.service.request import ABRun, DecideRun, PlainRun, RecheckRun

    command = getattr(args, "command", None)
    if command == "ab":
        return ABRun(a=args.a, b=args.b)
    if command == "recheck":
        return RecheckRun(report=str(Path(args.report).resolve()))
    return DecideRun() if getattr(args, "decide", False) else PlainRun()


def provider_options_from_args(args: argparse.Namespace) -> ProviderOptions | None:
    """The API flags (`PROVIDER_FLAGS` and `--header 'Name: value'`) as provider options
    (None when none given).

    Raises:
        ValueError: a header without a colon, with a name that is not a header name, or
            with CR, LF or NUL in its value (the message never shows the value).
    """
    from tui_eval.agents.http.options import ProviderOptions, header_problem

    fields: dict[str, Any] = {
        field: value
        for flag, (field, _) in PROVIDER_FLAGS.items()
        if (value := getattr(args, flag, None)) is not None
    }
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


__all__ = [
    "PLAIN_RUN_ONLY",
    "PROVIDER_FLAGS",
    "SETTINGS_FLAGS",
    "add_settings_flags",
    "provider_options_from_args",
    "request_from_args",
    "setting",
]
