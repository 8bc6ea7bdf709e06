"""`RunRequest`: what a front-end asks of a suite run, journaled so a resume does the same;
its *kind* is a typed value, not flags resolved by precedence."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic

from tui_eval.core.settings import RunSettings
from tui_eval.util.secrets import is_credential_header


class _Kind(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")


class PlainRun(_Kind):
    """Run the suite's cases (all of them, or the request's selection: a rerun)."""

    kind: Literal["run"] = "run"


class DecideRun(_Kind):
    """Sample each case until its comparison with a baseline is decided (`run --decide`).

    Attributes:
        against: the report file compared with instead of the baseline file (journaled,
            so a resume compares with the same report).
    """

    kind: Literal["decide"] = "decide"
    against: str | None = None


class ABRun(_Kind):
    """An A/B run (`tui-eval ab`): each side a model spec or `module:attribute`."""

    kind: Literal["ab"] = "ab"
    a: str
    b: str


class RecheckRun(_Kind):
    """Judge the saved outputs of the `report` file with the current checks (`recheck`)."""

    kind: Literal["recheck"] = "recheck"
    report: str


RunKind = Annotated[PlainRun | DecideRun | ABRun | RecheckRun, pydantic.Field(discriminator="kind")]


class RunRequest(pydantic.BaseModel):
    """What one run of a suite was asked to do, whichever front-end asked.

    Attributes:
        kind: `PlainRun()`, `DecideRun()`, `ABRun(a, b)` or `RecheckRun(report)`.
        settings: the run settings the front-end gives over the suite's (only its given
            fields count).
        filter: only cases whose name contains this text (case-insensitive).
        cases: only these cases, by name (a rerun of the failing ones).
        baseline: compare with (and save to) this file instead of the suite's baseline.
        save_baseline: save the run as the baseline when it finishes.
        shard: (i, n) when the run is shard i of n (`--shard i/n`); its cases are `cases`.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")

    kind: RunKind = PlainRun()
    settings: RunSettings = RunSettings()
    filter: str | None = None
    cases: tuple[str, ...] | None = None
    baseline: str | None = None
    save_baseline: bool = False
    shard: tuple[int, int] | None = None

    @pydantic.field_validator("settings", mode="before")
    @classmethod
    def _settings(cls, value: Any) -> Any:
        return RunSettings(**value) if isinstance(value, dict) else value

    @pydantic.field_serializer("settings")
    def _journaled_settings(self, settings: RunSettings) -> dict[str, Any]:
        return settings.journaled()

    def but(self, **changes: Any) -> RunRequest:
        """This request with `changes` (`settings` are set over the request's own)."""
        settings = changes.pop("settings", None)
        if isinstance(settings, RunSettings):
            changes["settings"] = self.settings.over(settings)
        return self.model_copy(update=changes)

    def rerun(self, cases: tuple[str, ...], **settings: Any) -> RunRequest:
        """A plain rerun of `cases` with this request's settings (and `settings` over them)."""
        return self.but(kind=PlainRun(), cases=cases, shard=None, settings=RunSettings(**settings))

    def for_disk(self) -> RunRequest:
        """This request as the journal keeps it: without credential headers."""
        provider = self.settings.provider
        if provider is None or not provider.headers:
            return self
        kept = {k: v for k, v in provider.headers.items() if not is_credential_header(k)}
        if len(kept) == len(provider.headers):
            return self
        safe = provider.model_copy(update={"headers": kept})
        return self.model_copy(update={"settings": self.settings.replace(provider=safe)})

    @property
    def is_partial(self) -> bool:
        """Whether the run covers only some of the suite's cases."""
        return bool(self.filter) or self.cases is not None


class Exports(pydantic.BaseModel):
    """The report files an invocation writes once its suites have run (journaled, so
    `tui-eval resume` writes them too).

    Attributes:
        json_report: the report (of every suite) as JSON (`--json`).
        junit: JUnit XML, one testcase per case.
        markdown: a Markdown summary.
        csv: one CSV row per sample.
        samples_jsonl: one JSON line per sample.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    json_report: str | None = None
    junit: str | None = None
    markdown: str | None = None
    csv: str | None = None
    samples_jsonl: str | None = None

    @property
    def asked(self) -> bool:
        """Whether any file is asked for."""
        return any(path is not None for path in self.model_dump().values())

    def absolute(self) -> Exports:
        """The same files with absolute paths (a resume may run from another folder)."""
        return Exports.model_validate(
            {
                key: str(Path(path).absolute()) if path is not None else None
                for key, path in self.model_dump().items()
            }
        )
