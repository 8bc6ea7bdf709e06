"""Human labels of judged outputs: `<suite folder>/__labels__/<suite name>.jsonl`, one
`LabelRecord` a line (DESIGN §8; a fault label: check `"fault"`, the party as label). It reads
well in a diff: a new label is appended, relabelling replaces its line in place, and every
write merges with what is on disk under a lock.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias

import pydantic

from tui_eval.agents.messages import Conversation, RunResult
from tui_eval.checks.base import SCORE_PASS, CheckResult
from tui_eval.checks.faults import FAULT_CHECK, PARTIES, Party
from tui_eval.suites import Suite
from tui_eval.suites.suite import suite_file, suite_file_stem
from tui_eval.util.atomic import atomic_write_bytes, folder_lock
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.text import json_safe, validation_message

LABELS_SCHEMA_VERSION = 1
LABELS_FOLDER = "__labels__"

Score = Annotated[float, pydantic.Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Label: TypeAlias = Literal["pass", "fail"] | Party | Score
"""A human label: "pass", "fail", a score in 0..1, or (for the fault check) a party."""


class LabelsFileError(TuiEvalError, ValueError):
    """A labels file could not be read; the message names the file and line."""


class LabelRecord(pydantic.BaseModel):
    """One labelled output: a line of the labels file.

    Attributes:
        check: the judged check's name (`"fault"` for a conversation's fault).
        output: the agent's final output, as JSON.
        labelled_at: when (Unix time); None: not recorded.
        run: the stored agent run the judge reads (None: the output and the case's input).
        checks: a fault label's check results, which the reviewer reads (None: not stored).
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
    checks: list[CheckResult] | None = None

    @pydantic.model_validator(mode="after")
    def _party_only_for_faults(self) -> LabelRecord:
        """A party is the fault check's label, and the fault check takes no other."""
        is_party = isinstance(self.label, str) and self.label in PARTIES
        if self.check == FAULT_CHECK and not is_party:
            raise ValueError(
                f"a fault label names who failed the conversation: {_PARTY_NAMES}, "
                f"not {self.label!r}"
            )
        if is_party and self.check != FAULT_CHECK:
            raise ValueError(
                f"{self.label!r} is a fault label: only the {FAULT_CHECK!r} check takes it "
                f"(the label of check {self.check!r} is 'pass', 'fail' or a score in 0..1)"
            )
        return self

    @property
    def key(self) -> tuple[str, str, str]:
        """What the label is about (`label_key`): relabelling it replaces it."""
        conversation = self.run.conversation if self.run is not None else None
        return label_key(self.case, self.check, self.output, conversation)

    @property
    def party(self) -> Party | None:
        """Who failed the conversation, by a fault label (None for a judged check's)."""
        return next((party for party in PARTIES if party == self.label), None)

    @property
    def score(self) -> float | None:
        """The score label (None for a "pass"/"fail" or a fault label)."""
        return None if isinstance(self.label, str) else float(self.label)

    def passed(self, threshold: float = SCORE_PASS) -> bool:
        """Whether the human passed the output: "pass", or a score reaching `threshold`."""
        if isinstance(self.label, str):
            return self.label == "pass"
        return float(self.label) >= threshold - 1e-12


_PARTY_NAMES = ", ".join(repr(party) for party in PARTIES[:-1]) + f" or {PARTIES[-1]!r}"


def label_key(
    case: str, check: str, output: Any, conversation: Conversation | None = None
) -> tuple[str, str, str]:
    """The identity of a labelled output: case, check and output as canonical JSON (for a
    fault label, every turn too: two conversations ending alike are two labels)."""
    about = json_safe(output)
    if check == FAULT_CHECK and conversation is not None:
        said = [[turn.user, turn.reply, turn.error] for turn in conversation.turns]
        about = {"output": about, "turns": said}
    return (case, check, json.dumps(about, sort_keys=True, ensure_ascii=False))


def new_label(
    case: str,
    check: str,
    output: Any,
    label: Label,
    *,
    run: RunResult | None = None,
    checks: list[CheckResult] | None = None,
    labeler: str | None = None,
    note: str | None = None,
    labelled_at: float | None = None,
) -> LabelRecord:
    """A label for `output` of `case` as judged by `check`, stamped now; the outputs are
    stored in their JSON form, so the file reads back equal.

    Raises:
        pydantic.ValidationError: not a label of that check.
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
        checks=list(checks) if checks is not None else None,
    )


def labels_path(suite: Suite) -> Path:
    """Where `suite`'s labels are written: `<suite folder>/__labels__/<stem>.jsonl`."""
    folder = suite.path.parent if suite.path is not None else Path.cwd()
    return folder / LABELS_FOLDER / f"{suite_file_stem(suite.name)}.jsonl"


def earlier_labels_path(suite: Suite) -> Path | None:
    """`suite`'s labels file as an earlier version named it, while none is at `labels_path`."""
    path = labels_path(suite)
    cases = {case.label for case in suite.cases}

    def owned(file: Path) -> bool:  # the file holds labels of this suite's cases only
        try:
            records = read_labels(file)
        except (LabelsFileError, OSError):
            return False
        return bool(records) and all(record.case in cases for record in records)

    found = suite_file(path.parent, suite.name, ".jsonl", owned=owned)
    return found if found != path else None


def read_labels(path: str | Path) -> list[LabelRecord]:
    """Every label in the file, in order (none when it is missing); a later line about the
    same output replaces an earlier one (a file merged by hand).

    Raises:
        LabelsFileError: a line is not a label.
    """
    target = Path(path)
    try:
        data = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelsFileError(f"{target}: cannot read labels: {exc}") from None
    records: dict[tuple[str, str, str], LabelRecord] = {}
    # Lines end at "\n" only: `str.splitlines()` would also cut at U+2028, U+0085 and
    # others that a label's output may hold (and an older tui-eval wrote raw).
    for number, line in enumerate(data.split("\n"), start=1):
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


_LINE_BREAKS_IN_STRINGS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}
"""Characters other line readers (`str.splitlines()`, JavaScript) take for line ends; JSON
escapes none of them, so they are written escaped (they only ever occur in strings)."""


def record_line(record: LabelRecord) -> str:
    """The record as one line of the file (`run`, `note`, `checks` only when present, so a
    hand-written line and a written one look alike)."""
    document = record.model_dump(mode="json", fallback=repr)
    optional = ("run", "note", "checks")
    kept = {k: v for k, v in document.items() if v is not None or k not in optional}
    line = json.dumps(kept, ensure_ascii=False)
    for raw, escaped in _LINE_BREAKS_IN_STRINGS.items():
        line = line.replace(raw, escaped)
    return line


class LabelStore:
    """A suite's labels, read once; each change is merged into the file on disk under its
    folder's lock, so two stores on one file keep each other's labels.

    Example:
        >>> store = LabelStore.of(suite)  # doctest: +SKIP
        >>> store.put(new_label("refund", "llm_judge", "Sorry…", "fail", labeler="ana"))  # doctest: +SKIP
    """

    def __init__(
        self, path: str | Path, records: Iterable[LabelRecord] = (), earlier: Path | None = None
    ) -> None:
        self.path = Path(path)
        self.earlier = earlier
        """The file an earlier version named for the suite, removed by the first write."""
        self._records: dict[tuple[str, str, str], LabelRecord] = {r.key: r for r in records}
        self._unsaved: dict[tuple[str, str, str], LabelRecord | None] = {}
        self._synced: bytes | None = None
        """A digest of the file as this store last read or wrote it (None: unknown)."""

    @classmethod
    def load(cls, path: str | Path) -> LabelStore:
        """The labels in `path` (none when it does not exist yet).

        Raises:
            LabelsFileError: a line is not a label.
        """
        # Looked at before reading: a file replaced in between is read again on writing.
        synced = _digest(Path(path))
        store = cls(path, read_labels(path))
        store._synced = synced
        return store

    @classmethod
    def of(cls, suite: Suite) -> LabelStore:
        """The labels of `suite`, from its labels file (or an earlier version's, `earlier`)."""
        earlier = earlier_labels_path(suite)
        if earlier is None:
            return cls.load(labels_path(suite))
        store = cls(labels_path(suite), read_labels(earlier), earlier=earlier)
        return store

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[LabelRecord]:
        return iter(list(self._records.values()))

    def get(
        self, case: str, check: str, output: Any, conversation: Conversation | None = None
    ) -> LabelRecord | None:
        """The label of this output (of this conversation, for a fault), if it has one."""
        return self._records.get(label_key(case, check, output, conversation))

    def find(self, key: tuple[str, str, str]) -> LabelRecord | None:
        """The label with this identity (`LabelRecord.key`, a queue item's `key`), if any."""
        return self._records.get(key)

    def put(self, record: LabelRecord) -> LabelRecord | None:
        """Label an output (in its earlier label's place, keeping its note unless `record`
        brings one) and write the file; the same label again changes nothing.

        Returns:
            The label it replaced, if any (give it to `restore` to undo).

        Raises:
            LabelsFileError: the file on disk is no longer a labels file (nothing written).
        """
        previous = self._records.get(record.key)
        if previous is not None and record.note is None and previous.note is not None:
            record = record.model_copy(update={"note": previous.note})
        if previous is not None and (record.label, record.note) == (previous.label, previous.note):
            return previous
        self._change(record.key, record)
        return previous

    def remove(self, key: tuple[str, str, str]) -> LabelRecord | None:
        """Remove the label of an output and write the file; returns what was removed."""
        removed = self._records.get(key)
        if removed is not None:
            self._change(key, None)
        return removed

    def restore(self, key: tuple[str, str, str], previous: LabelRecord | None) -> None:
        """Undo a `put`: bring back `previous` (None: remove the label)."""
        if previous is None:
            self.remove(key)
        else:
            self._change(key, previous)

    def _change(self, key: tuple[str, str, str], record: LabelRecord | None) -> None:
        self._unsaved[key] = record
        if record is None:
            self._records.pop(key, None)
        else:
            self._records[key] = record
        self._write()

    def _write(self) -> None:
        """Merge this store's unsaved changes into the file on disk, under its folder's lock."""
        with folder_lock(self.path.parent):
            if self._synced is not None and _digest(self.path) == self._synced:
                merged = dict(self._records)  # nobody wrote since: it holds our changes
            else:
                moving = self.earlier is not None and not self.path.exists()
                source = self.earlier if moving and self.earlier else self.path
                merged = {record.key: record for record in read_labels(source)}
                for key, record in self._unsaved.items():
                    if record is None:
                        merged.pop(key, None)
                    else:
                        merged[key] = record  # in place when it is there, else at the end
            lines = [record_line(record) for record in merged.values()]
            data = ("\n".join(lines) + "\n" if lines else "").encode()
            atomic_write_bytes(self.path, data)
            self._synced = hashlib.sha256(data).digest()
            if self.earlier is not None:
                self.earlier.unlink(missing_ok=True)
                self.earlier = None
        self._unsaved.clear()
        self._records = merged


def _digest(path: Path) -> bytes | None:
    """A digest of the file's bytes (None: there is none, or it cannot be read)."""
    try:
        return hashlib.sha256(path.read_bytes()).digest()
    except OSError:
        return None
