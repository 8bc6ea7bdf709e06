"""Reading Inspect files with the standard library: datasets as `.jsonl`, `.json` (an array,
or one sample) or `.csv` (a header row; Inspect's dialect); eval logs as `.eval` (a zip:
`header.json` or `_journal/start.json`, `samples/ID_epoch_N.json` each) or `.json` (an
object with `eval` and `samples`).
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui_eval.importers.writing import ImportSourceError

EXPECTED = (
    "expected an Inspect dataset (JSON lines .jsonl, a JSON array .json, CSV .csv) or an "
    "Inspect eval log (.eval, or .json)"
)
_SAMPLE_FILE = re.compile(r"^samples/.+_epoch_(\d+)\.json$")


@dataclass(slots=True)
class Record:
    """One sample as the file holds it.

    Attributes:
        label: how notes name it (`line 3`, `sample 'q1'`).
        where: how errors name it (`data.jsonl:3`, `log.eval: sample 'q1'`).
        attachments: the log's stored contents that `attachment://HASH` values refer to.
    """

    label: str
    where: str
    fields: Mapping[str, Any]
    attachments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class InspectSource:
    """What a file holds: its samples, and for an eval log how they were run.

    Attributes:
        records: the samples (a log's: each id's first epoch).
        scorers: the log's scorers, as (name, options).
        solvers: the log's plan, as (solver, params).
        extra_columns: CSV columns that are not sample fields.
    """

    records: list[Record] = field(default_factory=list)
    is_log: bool = False
    scorers: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    solvers: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    epochs: int = 1
    model: str | None = None
    extra_columns: list[str] = field(default_factory=list)


def read_source(source: Path) -> InspectSource:
    """The samples of an Inspect dataset or eval log file, whichever it is.

    Raises:
        ImportSourceError: the file cannot be read or is none of the formats.
    """
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise ImportSourceError(f"{source}: cannot read: {exc.strerror or exc}") from None
    suffix = source.suffix.lower()
    if data.startswith(b"PK\x03\x04") or suffix == ".eval":
        return _eval_log(source, data)
    if data.startswith(b"PAR1"):
        raise ImportSourceError(
            f"{source}: a Parquet file; {EXPECTED} (write the dataset as JSON lines first)"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ImportSourceError(f"{source}: not text; {EXPECTED}") from None
    if suffix == ".csv":
        return _csv(source, text)
    try:
        whole = json.loads(text)
    except ValueError as exc:
        if suffix == ".json":
            raise ImportSourceError(f"{source}: not valid JSON: {exc}; {EXPECTED}") from None
        return _json_lines(source, text, suffix in (".jsonl", ".ndjson"))
    if isinstance(whole, Mapping) and isinstance(whole.get("eval"), Mapping):
        return _json_log(source, whole)
    if isinstance(whole, list):
        return InspectSource(
            records=[
                Record(f"sample {n}", f"{source}: sample {n}", _object(item, source, n))
                for n, item in enumerate(whole, 1)
            ]
        )
    if isinstance(whole, Mapping):
        return InspectSource(records=[Record("line 1", f"{source}:1", whole)])
    raise ImportSourceError(f"{source}: a JSON {type(whole).__name__}; {EXPECTED}")


def _object(item: Any, source: Path, n: int) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise ImportSourceError(f"{source}: sample {n}: a sample must be a JSON object")
    return item


def _json_lines(source: Path, text: str, named: bool) -> InspectSource:
    records = []
    # JSON Lines end lines with \n alone: str.splitlines() would also split at U+2028,
    # U+0085 and other characters JSON strings may hold raw, cutting a sample in two.
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except ValueError as exc:
            hint = "" if named else f"; {EXPECTED}"
            raise ImportSourceError(f"{source}:{lineno}: not valid JSON: {exc}{hint}") from None
        if not isinstance(sample, Mapping):
            raise ImportSourceError(f"{source}:{lineno}: a sample must be a JSON object")
        records.append(Record(f"line {lineno}", f"{source}:{lineno}", sample))
    return InspectSource(records=records)


SAMPLE_FIELDS = ("input", "target", "choices", "id", "metadata", "sandbox", "files", "setup")
"""The fields Inspect reads from a dataset record by default (its `FieldSpec`)."""


def _csv(source: Path, text: str) -> InspectSource:
    reader = csv.DictReader(io.StringIO(text, newline=""), dialect="unix")
    records = []
    try:
        header = reader.fieldnames  # read now, so a row's first line is known below
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            if None in row or None in row.values():
                raise ImportSourceError(
                    f"{source}:{start}: this row's fields do not match the header's "
                    f"{len(header or [])} columns"
                )
            if any(value.strip() for value in row.values()):
                records.append(Record(f"line {start}", f"{source}:{start}", row))
    except csv.Error as exc:
        raise ImportSourceError(f"{source}:{reader.line_num}: not valid CSV: {exc}") from None
    extra = [name for name in header or [] if name not in SAMPLE_FIELDS]
    return InspectSource(records=records, extra_columns=extra)


def _eval_log(source: Path, data: bytes) -> InspectSource:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = list(dict.fromkeys(archive.namelist()))
            header_name = next(
                (n for n in ("header.json", "_journal/start.json") if n in names), None
            )
            if header_name is None:
                raise ImportSourceError(
                    f"{source}: a zip without header.json or _journal/start.json: not an "
                    "Inspect `.eval` log"
                )
            header = _member(archive, header_name, source)
            samples = [
                (name, _member(archive, name, source)) for name in names if _SAMPLE_FILE.match(name)
            ]
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as exc:
        raise ImportSourceError(
            f"{source}: not an Inspect `.eval` log (a zip of JSON files): {exc}"
        ) from None
    log = _log_header(source, header)
    log.records = _first_epochs(source, samples, log)
    return log


def _member(archive: zipfile.ZipFile, name: str, source: Path) -> Any:
    try:
        return json.loads(archive.read(name).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ImportSourceError(f"{source}: {name}: not valid JSON: {exc}") from None


def _json_log(source: Path, document: Mapping[str, Any]) -> InspectSource:
    log = _log_header(source, document)
    samples = document.get("samples")
    if samples is None:
        raise ImportSourceError(
            f"{source}: an Inspect eval log without samples (written with log_samples off?)"
        )
    if not isinstance(samples, list):
        raise ImportSourceError(f"{source}: samples: expected a list")
    log.records = _first_epochs(
        source, [(f"samples[{i}]", sample) for i, sample in enumerate(samples)], log
    )
    return log


def _log_header(source: Path, header: Any) -> InspectSource:
    if not isinstance(header, Mapping) or not isinstance(header.get("eval"), Mapping):
        raise ImportSourceError(f"{source}: an Inspect eval log needs an `eval` object")
    spec = header["eval"]
    log = InspectSource(is_log=True)
    for scorer in _listed(spec.get("scorers")):
        if isinstance(scorer, Mapping) and scorer.get("name"):
            log.scorers.append((str(scorer["name"]), _options(scorer.get("options"))))
    if not log.scorers:  # logs before `eval.scorers`: the results name them
        results = header.get("results")
        for score in _listed(results.get("scores") if isinstance(results, Mapping) else None):
            if isinstance(score, Mapping) and score.get("scorer"):
                entry = (str(score["scorer"]), _options(score.get("params")))
                if entry not in log.scorers:
                    log.scorers.append(entry)
    plan = header.get("plan")
    for step in _listed(plan.get("steps") if isinstance(plan, Mapping) else None):
        if isinstance(step, Mapping) and step.get("solver"):
            log.solvers.append((str(step["solver"]), _options(step.get("params"))))
    config = spec.get("config")
    epochs = config.get("epochs") if isinstance(config, Mapping) else None
    log.epochs = epochs if isinstance(epochs, int) and epochs > 0 else 1
    log.model = str(spec["model"]) if spec.get("model") else None
    return log


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _options(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _first_epochs(source: Path, samples: list[tuple[str, Any]], log: InspectSource) -> list[Record]:
    """One record per sample id (its first epoch), in id order."""
    first: dict[str, tuple[int, str, Mapping[str, Any]]] = {}
    for name, sample in samples:
        if not isinstance(sample, Mapping) or sample.get("id") is None:
            raise ImportSourceError(f"{source}: {name}: a logged sample needs an `id`")
        epoch = sample.get("epoch")
        epoch = epoch if isinstance(epoch, int) else 1
        log.epochs = max(log.epochs, epoch)
        key = str(sample["id"])
        if key not in first or epoch < first[key][0]:
            first[key] = (epoch, name, sample)
    ordered = sorted(first.items(), key=lambda item: _id_order(item[0]))
    return [
        Record(
            f"sample {key!r}",
            f"{source}: sample {key!r}",
            sample,
            attachments=_options(sample.get("attachments")),
        )
        for key, (_, _, sample) in ordered
    ]


def _id_order(key: str) -> tuple[int, int, str]:
    return (0, int(key), "") if key.isdigit() else (1, 0, key)
