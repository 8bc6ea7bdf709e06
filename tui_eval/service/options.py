"""`RunOptions`: what a suite run was asked to do, journaled so a resume does the same."""

from __future__ import annotations

import argparse
from typing import Any, Literal

import pydantic

from tui_eval.agents.providers.cache import CacheMode
from tui_eval.agents.providers.settings import ProviderOptions
from tui_eval.util.secrets import is_credential_header


class RunOptions(pydantic.BaseModel):
    """What one run of a suite was asked to do, whichever front-end asked.

    The CLI's flags and the app's launch options both become one of these; it is written
    in the run's journal, so `tui-eval resume` (or `R` in the app) finishes the same run.

    Attributes:
        concurrency: cases at once (None: the suite's own setting).
        samples: every case's sample count (None: each case's own).
        filter: only cases whose name contains this text (case-insensitive).
        cases: only these cases, by name (a rerun of the failing ones).
        fail_fast: run cases one by one and stop at the first failing case.
        baseline: compare with (and save to) this file instead of the suite's baseline.
        save_baseline: save the run as the baseline when it finishes.
        parallel_samples: run the samples of a case concurrently when the agent is built
            fresh for every sample (the app's "more samples" rerun).
        shard: (i, n) when the run is shard i of n (`--shard i/n`); its cases are `cases`.
        provider: HTTP provider options over the suite's (`--rpm`, `--request-timeout`...).
        max_cost: dollars; no new sample starts past it (None: the suite's own setting).
        cache: the response cache mode (None: the suite's own setting).
        executor: where samples run: `in-process` (default) or `ray`.
        ray_address: the Ray cluster to join (default: `RAY_ADDRESS`, else a local one).
        ray_workers: Ray worker actors (default: the cluster's CPUs).
        decide: sample each case until its comparison with the baseline is decided
            (`run --decide`), in journaled rounds.
        decide_against: with `decide`: the report file compared with instead of the
            baseline (the app's diff since the previous run: that run's report), so a
            resume compares with the same report.
        max_samples: with `decide` or `ab`: at most this many samples per case (and side).
        ab: (spec of agent A, spec of agent B): an A/B run of two agents (`tui-eval ab`).
        recheck: the report file whose saved outputs the suite's current checks judge
            again (`tui-eval recheck`), instead of calling the agent.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")

    concurrency: int | None = pydantic.Field(None, ge=1)
    samples: int | None = pydantic.Field(None, ge=1)
    filter: str | None = None
    cases: tuple[str, ...] | None = None
    fail_fast: bool = False
    baseline: str | None = None
    save_baseline: bool = False
    parallel_samples: bool = False
    shard: tuple[int, int] | None = None
    provider: ProviderOptions | None = None
    max_cost: float | None = pydantic.Field(None, gt=0)
    cache: CacheMode | None = None
    executor: Literal["in-process", "ray"] = "in-process"
    ray_address: str | None = None
    ray_workers: int | None = pydantic.Field(None, ge=1)
    decide: bool = False
    decide_against: str | None = None
    max_samples: int = pydantic.Field(100, ge=1)
    ab: tuple[str, str] | None = None
    recheck: str | None = None

    def for_disk(self) -> RunOptions:
        """These options as the journal keeps them: without request headers whose names
        mark them as credentials (Authorization, *key*, *token*, *secret*, cookies)."""
        provider = self.provider
        if provider is None or not provider.headers:
            return self
        kept = {k: v for k, v in provider.headers.items() if not _sensitive(k)}
        if len(kept) == len(provider.headers):
            return self
        return self.model_copy(update={"provider": provider.model_copy(update={"headers": kept})})

    @property
    def is_partial(self) -> bool:
        """Whether the run covers only some of the suite's cases."""
        return bool(self.filter) or self.cases is not None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunOptions:
        """The options given on the command line (`tui-eval run` flags; absent ones unset)."""
        return cls(
            concurrency=getattr(args, "concurrency", None),
            samples=getattr(args, "samples", None),
            filter=getattr(args, "filter", None),
            fail_fast=bool(getattr(args, "fail_fast", False)),
            baseline=getattr(args, "baseline", None),
            save_baseline=bool(getattr(args, "save_baseline", False)),
            provider=provider_options_from_args(args),
            max_cost=getattr(args, "max_cost", None),
            cache=getattr(args, "cache", None),
            executor=getattr(args, "executor", None) or "in-process",
            ray_address=getattr(args, "ray_address", None),
            ray_workers=getattr(args, "ray_workers", None),
            decide=bool(getattr(args, "decide", False)),
            max_samples=getattr(args, "max_samples", None) or 100,
        )


def provider_options_from_args(args: argparse.Namespace) -> ProviderOptions | None:
    """`--rpm`, `--tpm`, `--request-timeout`, `--retry-budget`, `--max-retries`,
    `--base-url` and `--header 'Name: value'` as provider options (None when none given).

    Raises:
        ValueError: a header without a colon.
    """
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
            raise ValueError(f"--header {raw!r} should be 'Name: value'")
        headers[name.strip()] = value.strip()
    if headers:
        fields["headers"] = headers
    return ProviderOptions(**fields) if fields else None


def _sensitive(header: str) -> bool:
    return is_credential_header(header)
