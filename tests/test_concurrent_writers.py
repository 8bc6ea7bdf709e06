"""Labels and review decisions are never lost to a concurrent writer (README, Guarantees):
each writer re-reads the file under a lock, merges its change and writes it back."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tui_eval.calibration import labels
from tui_eval.calibration.labels import LabelStore, new_label, read_labels
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report import baselines
from tui_eval.report.baselines import BaselineStatus, BaselineStore
from tui_eval.report.report import Report

WRITERS = 3


def every_writer_reads_first(monkeypatch: pytest.MonkeyPatch, module: Any, reader: str) -> None:
    """Make each writer, having read the file, wait until all of them have read it: without
    a lock they all merge into the same old file and only the last write survives, every
    time. With one, the first reader waits for company that cannot come (the others wait
    for its lock), gives up after a second, and the writes go one after another."""
    barrier = threading.Barrier(WRITERS, timeout=1)
    original: Callable[..., Any] = getattr(module, reader)

    def reading(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()
        return result

    monkeypatch.setattr(module, reader, reading)


def in_threads(work: Callable[[int], Any]) -> list[Any]:
    results: list[Any] = [None] * WRITERS
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors and not any(thread.is_alive() for thread in threads)
    return results


def test_three_label_sessions_labelling_at_once_keep_every_label(tmp_path: Path, monkeypatch):
    path = tmp_path / "__labels__" / "support.jsonl"
    LabelStore.load(path).put(new_label("old", "llm_judge", "kept", "pass", note="first"))
    sessions = [LabelStore.load(path) for _ in range(WRITERS)]
    every_writer_reads_first(monkeypatch, labels, "_digest")  # how it reads the file
    in_threads(lambda i: sessions[i].put(new_label(f"case {i}", "llm_judge", "o", "fail")))
    on_disk = read_labels(path)
    assert sorted(r.case for r in on_disk) == ["case 0", "case 1", "case 2", "old"]
    assert next(r for r in on_disk if r.case == "old").note == "first"


def report(*names: str) -> Report:
    return Report("support", [CaseResult(n, [SampleResult(n, 0, "passed")]) for n in names])


def test_three_accepts_into_one_baseline_at_once_keep_every_case(tmp_path: Path, monkeypatch):
    store = BaselineStore(tmp_path / "__baselines__" / "support.json")
    assert store.accept(report("kept"), ["kept"]).status is BaselineStatus.SAVED
    every_writer_reads_first(monkeypatch, baselines.BaselineStore, "read")
    outcomes = in_threads(lambda i: store.accept(report(f"case {i}"), [f"case {i}"]))
    assert all(outcome.status is BaselineStatus.SAVED for outcome in outcomes)
    baseline = store.read().baseline
    assert baseline is not None
    assert sorted(c.name for c in baseline.cases) == ["case 0", "case 1", "case 2", "kept"]
