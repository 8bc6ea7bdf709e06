"""`Suite`: a named set of cases plus the agent that runs them and how to run them."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import InitVar, dataclass, field, replace
from pathlib import Path
from typing import Any

from tui_eval.agents.http.cache import CacheMode
from tui_eval.agents.http.options import ProviderOptions
from tui_eval.agents.messages import Price
from tui_eval.checks.base import Check
from tui_eval.core.cases import Case
from tui_eval.core.settings import RunSettings, settings_problem

SUITE_SETTINGS = ("concurrency", "price", "provider", "max_cost", "cache", "count_user_faults")
"""The `RunSettings` a suite's keywords (and a suite file's keys) give."""


STEM_BYTES = 200
"""The longest file stem of a suite's files, in UTF-8 bytes: with `.jsonl` and the affixes
of an atomic write's temporary file it stays within the 255 bytes file systems allow."""
_HASH_CHARS = 16
_UNSAFE = re.compile(r"[^\w\-. ]")
_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"{device}{n}" for device in ("com", "lpt") for n in "0123456789¹²³"}
)
"""Names Windows reserves for devices, whatever the extension (`con.json` included)."""
_FOLDER_FILES = frozenset({"quarantine"})
"""Stems of other files in `__baselines__/`, in any case (macOS and Windows ignore it)."""


def suite_file_stem(name: str) -> str:
    """The stem of a suite's files (baseline, labels): distinct per name, at most
    `STEM_BYTES` UTF-8 bytes, valid on every file system and inside its folder. A simple
    name is its own stem (earlier files keep their place); any other is made safe, cut, and
    followed by `~` and a hash of the name (`~` is in no simple stem: no two share a file).

    Example:
        >>> suite_file_stem("support bot"), suite_file_stem("chat/en")[:8]
        ('support bot', 'chat_en~')
    """
    if _is_simple(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    shown = unicodedata.normalize("NFC", _legacy_stem(name, limit=None))
    head = _cut_bytes(shown, STEM_BYTES - 2 - _HASH_CHARS).rstrip(" .")
    stem = f"{head or 'suite'}~{digest}"
    return f"_{stem}" if _is_device(stem) else stem  # `con.txt~…` is still `con`'s


def _is_simple(name: str) -> bool:
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return (
        0 < size <= STEM_BYTES
        and not _UNSAFE.search(name)
        and name == name.strip()
        and not name.startswith(".")
        and unicodedata.is_normalized("NFC", name)
        and not _is_device(name)
        and name.casefold() not in _FOLDER_FILES
    )


def _is_device(stem: str) -> bool:
    """Whether Windows reads a file of this stem as a device: `con`, `con.txt`, `com1 .x`."""
    return stem.split(".", 1)[0].rstrip(" ").casefold() in _WINDOWS_DEVICES


def _cut_bytes(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, never inside a character."""
    return text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


def _legacy_stem(name: str, limit: int | None = 120) -> str:
    """The stem earlier versions gave `name` (`chat_en` for `chat/en` and `chat:en` alike)."""
    stem = _UNSAFE.sub("_", name).strip().lstrip(".")
    return (stem[:limit] if limit is not None else stem) or "suite"


def suite_file(folder: Path, name: str, suffix: str, *, owned: Callable[[Path], bool]) -> Path:
    """The file of suite `name` in `folder`: `<stem><suffix>`, or the one an earlier version
    named for it (`chat_en.json` for `chat/en`) while there is none at the new name and
    `owned` says the old one is this suite's (it may be another's, or shared). Nothing is
    moved here: the stores move it on their first write."""
    path = folder / f"{suite_file_stem(name)}{suffix}"
    legacy = folder / f"{_legacy_stem(name)}{suffix}"
    if legacy == path or path.exists() or not legacy.is_file() or not owned(legacy):
        return path
    return legacy


def holds_report_of(name: str) -> Callable[[Path], bool]:
    """Whether a report file is of the suite `name` (unreadable: no one's), for `owned`."""

    def owned(path: Path) -> bool:
        try:
            document = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return False
        report = document.get("report") if isinstance(document, dict) else None
        return isinstance(report, dict) and report.get("name") == name

    return owned


@dataclass(eq=False)
class Suite:
    """A named set of cases and the agent that runs them (a Python suite file defines them at
    module level).

    Attributes:
        name: the suite's name (baselines and history are keyed by it).
        agent: any agent source `evaluate()` accepts.
        settings: how its runs run (`RunSettings`: only the settings it gives are set); the
            keywords `concurrency`, `price`, `provider`, `max_cost`, `cache` and
            `count_user_faults` are folded into it as the suite is made.
        skip: a reason not to run it (a missing API key); shown instead of results.
        required_env: environment variables it needs (YAML `skip_unless_env`), given to Ray
            workers besides the providers' key variables.
        checks: checks every case must meet, before each case's own (YAML: `checks:`).

    Raises:
        ValueError: a setting is not valid (`concurrency=0`, a negative `max_cost`).
    """

    name: str
    agent: Any = None
    cases: list[Case] = field(default_factory=list)
    concurrency: InitVar[int | None] = None
    price: InitVar[Price | None] = None
    provider: InitVar[ProviderOptions | None] = None
    max_cost: InitVar[float | None] = None
    cache: InitVar[CacheMode | None] = None
    count_user_faults: InitVar[bool | None] = None
    baseline: str | Path | None = None
    skip: str | None = None
    required_env: list[str] = field(default_factory=list)
    path: Path | None = None
    description: str = ""
    checks: Sequence[Check] = ()
    settings: RunSettings = field(default_factory=RunSettings)

    def __post_init__(
        self,
        concurrency: int | None,
        price: Price | None,
        provider: ProviderOptions | None,
        max_cost: float | None,
        cache: CacheMode | None,
        count_user_faults: bool | None,
    ) -> None:
        self.checks = list(self.checks)
        self.cases = [self._with_suite_checks(case) for case in self.cases]
        given = {
            name: value
            for name, value in zip(
                SUITE_SETTINGS,
                (concurrency, price, provider, max_cost, cache, count_user_faults),
                strict=True,
            )
            if value is not None
        }
        if given:
            try:
                self.settings = self.settings.replace(**given)
            except ValueError as exc:
                raise ValueError(f"suite {self.name!r}: {settings_problem(exc)}") from None

    def _with_suite_checks(self, case: Case) -> Case:
        """`case` with the suite's checks first (once: a `select` copy finds them there)."""
        shared = list(self.checks)
        if not shared:
            return case
        own = list(case.checks)
        if len(own) >= len(shared) and all(a is b for a, b in zip(own, shared, strict=False)):
            return case
        return replace(case, checks=[*shared, *own])

    def __repr__(self) -> str:
        return f"Suite({self.name!r}, {len(self.cases)} cases)"

    @property
    def total_samples(self) -> int:
        """Samples in a full run."""
        return sum(case.samples for case in self.cases)

    @property
    def baseline_path(self) -> Path:
        """`baseline` when given, else `__baselines__/<stem>.json` beside its file."""
        if self.baseline is not None:
            given = Path(self.baseline)
            if not given.is_absolute() and self.path is not None:
                return self.path.parent / given
            return given
        folder = self.path.parent if self.path is not None else Path.cwd()
        return folder / "__baselines__" / f"{suite_file_stem(self.name)}.json"

    @property
    def earlier_baseline_path(self) -> Path | None:
        """This suite's baseline as an earlier version named it (`suite_file`)."""
        path = self.baseline_path
        if self.baseline is not None:
            return None
        found = suite_file(path.parent, self.name, ".json", owned=holds_report_of(self.name))
        return found if found != path else None

    def duplicate_names(self) -> list[str]:
        """Case names used more than once (they would make `compare()` ambiguous)."""
        return [name for name, n in Counter(case.label for case in self.cases).items() if n > 1]

    def select(
        self,
        *,
        filter: str | None = None,
        samples: int | None = None,
        names: Iterable[str] | None = None,
    ) -> Suite:
        """A copy with the cases matching `filter` (any case) or in `names`, at `samples`."""
        cases = self.cases
        if filter:
            needle = filter.casefold()
            cases = [c for c in cases if needle in c.label.casefold()]
        if names is not None:
            wanted = set(names)
            cases = [c for c in cases if c.label in wanted]
        if samples is not None:
            cases = [replace(c, samples=samples) for c in cases]
        return replace(self, cases=list(cases))


def _given(name: str) -> property:
    return property(
        lambda suite: suite.settings.given().get(name), doc=f"`settings.{name}` if given"
    )


for _name in SUITE_SETTINGS:  # the keywords read back (None: not given) from their one home
    setattr(Suite, _name, _given(_name))
