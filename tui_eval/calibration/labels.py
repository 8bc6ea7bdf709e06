"""Human labels of judged outputs: `<suite folder>/__labels__/<suite name>.jsonl`.

One JSON object a line (DESIGN §8): what was judged (case, check, the agent's output and,
optionally, its stored run), the human label, who gave it and when. The file sits beside the
suite, in the repository, and reads well in a diff: a new label is appended at the end and
relabelling the same output replaces its line in place. Every write is atomic.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias

import pydantic

from tui_eval.agents.messages import RunResult
from tui_eval.checks.base import SCORE_PASS
from tui_eval.suites import Suite
from tui_eval.suites.suite import suite_file
from tui_eval.util.atomic import atomic_write_bytes
from tui_eval.util.text import json_safe, validation_message

LABELS_SCHEMA_VERSION = 1
LABELS_FOLDER = "__labels__"

Score = Annotated[float, pydantic.Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Label: TypeAlias = Literal["pass", "fail"] | Score
"""A human label: "pass", "fail", or a score in 0..1 (for scored rubrics)."""


class LabelsFileError(ValueError):
    """A labels file could not be read; the message names the file and line."""


class LabelRecord(pydantic.BaseModel):
    """One labelled output: a line of the labels file.

    Attributes:
        case: the case's name.
        check: the judged check's name.
        output: the agent's final output, as JSON.
        label: "pass", "fail", or a score in 0..1.
        labeler: who labelled it (None: not recorded).
        labelled_at: when, as a Unix time (None: not recorded).
        run: the stored agent run the judge reads (None: the output and the case's input).
        note: the labeller's note.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    schema_version: Annotated[int, pydantic.Field(ge=1, le=LABELS_SCHEMA_VERSION)] = (
        LABELS_SCHEMA_VERSION
    )
    case: str
    check: str
    output: Any = None
    label: Label
    labeler: str | None = None
    labelled_at: float | None = None
    run: RunResult | None = None
    note: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """What the label is about: case, check and output (relabelling it replaces it)."""
        return label_key(self.case, self.check, self.output)

    @property
    def score(self) -> float | None:
        """The score label (None for a "pass"/"fail" label)."""
        return None if isinstance(self.label, str) else float(self.label)

    def passed(self, threshold: float = SCORE_PASS) -> bool:
        """Whether the human passed the output: "pass", or a score reaching `threshold`."""
        if isinstance(self.label, str):
            return self.label == "pass"
        return float(self.label) >= threshold - 1e-12


def label_key(case: str, check: str, output: Any) -> tuple[str, str, str]:
    """The identity of a labelled output: its case, check and output (as canonical JSON)."""
    return (case, check, json.dumps(json_safe(output), sort_keys=True, ensure_ascii=False))


def new_label(
    case: str,
    check: str,
    output: Any,
    label: Label,
    *,
    run: RunResult | None = None,
    labeler: str | None = None,
    note: str | None = None,
    labelled_at: float | None = None,
) -> LabelRecord:
    """A label for `output` of `case` as judged by `check`, stamped now.

    The output (and the run's) is stored in its JSON form, so the file reads back equal.

    Raises:
        pydantic.ValidationError: the label is not "pass", "fail" or a score in 0..1.
    """
    safe_output = json_safe(output)
    stored_run = replace(run, output=json_safe(run.output)) if run is not None else None
    return LabelRecord(
        case=case,
        check=check,
        output=safe_output,
        label=label,
        labeler=labeler,
        labelled_at=time.time() if labelled_at is None else labelled_at,
        run=stored_run,
        note=note or None,
    )


def labels_path(suite: Suite) -> Path:
    """Where `suite`'s labels live: `<suite folder>/__labels__/<suite name>.jsonl` (the
    name's file stem, `suite_file_stem`; a file an earlier version named for the suite,
    whose labels are all of its cases, is moved there first)."""
    folder = suite.path.parent if suite.path is not None else Path.cwd()
    return suite_file(folder / LABELS_FOLDER, suite.name, ".jsonl", owned=_labels_of(suite))


def _labels_of(suite: Suite) -> Callable[[Path], bool]:
    """Whether a labels file holds labels of `suite` only (of its cases, at least one)."""

    def owned(path: Path) -> bool:
        try:
            records = read_labels(path)
        except (LabelsFileError, OSError):
            return False
        cases = {case.label for case in suite.cases}
        return bool(records) and all(record.case in cases for record in records)

    return owned


def read_labels(path: str | Path) -> list[LabelRecord]:
    """Every label in the file, in file order (a missing file holds none).

    A line labelling an output already labelled above replaces it (the file was merged by
    hand). Blank lines are skipped.

    Raises:
        LabelsFileError: a line is not a label; the message names the file and line.
    """
    target = Path(path)
    try:
        data = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelsFileError(f"{target}: cannot read labels: {exc}") from None
    records: dict[tuple[str, str, str], LabelRecord] = {}
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = LabelRecord.model_validate_json(line)
        except pydantic.ValidationError as exc:
            raise LabelsFileError(
                f"{target}, line {number}: not a label: {_line_problem(line, exc)}"
            ) from None
        records.pop(record.key, None)
        records[record.key] = record
    return list(records.values())


def _line_problem(line: str, exc: pydantic.ValidationError) -> str:
    try:
        json.loads(line)
    except ValueError as parse_error:
        return f"not valid JSON ({parse_error})"
    return validation_message(exc, every=True)


def record_line(record: LabelRecord) -> str:
    """The record as one line of the labels file (the optional `run` and `note` only when
    present, so a hand-written minimal line and a written one look alike)."""
    document = record.model_dump(mode="json", fallback=repr)
    for optional in ("run", "note"):
        if document.get(optional) is None:
            document.pop(optional, None)
    return json.dumps(document, ensure_ascii=False)


class LabelStore:
    """A suite's labels, read once and written back atomically on every change.

    Example:
        >>> store = LabelStore.of(suite)  # doctest: +SKIP
        >>> store.put(new_label("refund", "llm_judge", "Sorry…", "fail", labeler="ana"))  # doctest: +SKIP

    Attributes:
        path: the labels file.
    """

    def __init__(self, path: str | Path, records: Iterable[LabelRecord] = ()) -> None:
        self.path = Path(path)
        self._records: dict[tuple[str, str, str], LabelRecord] = {r.key: r for r in records}

    @classmethod
    def load(cls, path: str | Path) -> LabelStore:
        """The labels in `path` (none when it does not exist yet).

        Raises:
            LabelsFileError: a line is not a label.
        """
        return cls(path, read_labels(path))

    @classmethod
    def of(cls, suite: Suite) -> LabelStore:
        """The labels of `suite`, from its labels file."""
        return cls.load(labels_path(suite))

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[LabelRecord]:
        return iter(list(self._records.values()))

    def get(self, case: str, check: str, output: Any) -> LabelRecord | None:
        """The label of this output, if it has one."""
        return self._records.get(label_key(case, check, output))

    def put(self, record: LabelRecord) -> LabelRecord | None:
        """Label an output (replacing its earlier label in place) and write the file.

        Returns:
            The label it replaced, if any (give it to `restore` to undo).
        """
        previous = self._records.get(record.key)
        self._records[record.key] = record
        self._write()
        return previous

    def remove(self, key: tuple[str, str, str]) -> LabelRecord | None:
        """Remove the label of an output and write the file; returns what was removed."""
        removed = self._records.pop(key, None)
        if removed is not None:
            self._write()
        return removed

    def restore(self, key: tuple[str, str, str], previous: LabelRecord | None) -> None:
        """Undo a `put`: bring back `previous` (or remove the label when there was none)."""
        if previous is None:
            self.remove(key)
        else:
            self.put(previous)

    def _write(self) -> None:
        lines = [record_line(record) for record in self._records.values()]
        atomic_write_bytes(self.path, ("\n".join(lines) + "\n" if lines else "").encode())


__all__ = [
    "Label",
    "LabelRecord",
    "LabelStore",
    "LabelsFileError",
    "label_key",
    "labels_path",
    "new_label",
    "read_labels",
]
