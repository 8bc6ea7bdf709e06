"""The suite-run service: one way to start, journal, resume and finish a suite run,
whichever front-end asked for it."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.test_cli import cli
from tui_eval import Case, Suite, contains
from tui_eval.core.settings import RunSettings
from tui_eval.report.baselines import BaselineStatus
from tui_eval.report.report import Report
from tui_eval.service.request import RunRequest
from tui_eval.service.run_plan import plan_run
from tui_eval.service.store import JOURNAL_SCHEMA_VERSION, RunHistory
from tui_eval.service.suite_run import SuiteRun
from tui_eval.suites import load_suites

pytestmark = pytest.mark.anyio

SUITE = """
from pathlib import Path
from tui_eval import Case, Suite, contains

LOG = Path(__file__).with_name("calls.log")

async def agent(question: str) -> str:
    with LOG.open("a") as handle:
        handle.write(question + "\\n")
    return "wrong" if question.startswith("bad") else "answer to " + question

suite = Suite("mixed", agent=agent, concurrency=1, cases=[
    Case(name, checks=[contains("answer")])
    for name in ["keep-0", "keep-1", "bad-keep", "keep-3", "drop-0", "drop-1"]
])
"""


def write_suite(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mixed_suite.py"
    path.write_text(SUITE)
    return path


def calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text().split() if log.exists() else []


def simulate_kill(history: RunHistory, keep: int) -> None:
    """Turn the newest run into one whose process died after `keep` journaled samples."""
    record = history.runs()[0]
    lines = record.journal_path.read_bytes().splitlines(keepends=True)
    record.journal_path.write_bytes(b"".join(lines[: 1 + keep]))
    for leftover in (record.report_path, record.summary_path):
        leftover.unlink(missing_ok=True)


async def run_service(path: Path, options: RunRequest, history: RunHistory) -> SuiteRun:
    (suite,) = load_suites([path]).suites
    service = SuiteRun.start(plan_run(suite, options), history=history, invocation="test")
    await service.run()
    return service


async def test_options_and_metadata_are_journaled(tmp_path):
    path = write_suite(tmp_path)
    history = RunHistory(tmp_path)
    options = RunRequest(
        filter="keep", settings=RunSettings(samples=2, fail_fast=True, concurrency=3)
    )
    service = await run_service(path, options, history)
    record = history.runs()[0]
    assert record.request == options
    assert service.report is not None
    assert service.report.metadata["run_id"] == record.run_id
    assert service.report.metadata["suite_path"] == str(path)
    # fail-fast stopped at the first failing case, whatever front-end asked.
    assert [c.name for c in service.report.cases] == ["keep-0", "keep-1", "bad-keep"]


async def test_resume_honours_the_journaled_options(tmp_path):
    path = write_suite(tmp_path)
    history = RunHistory(tmp_path)
    await run_service(path, RunRequest(filter="keep"), history)
    simulate_kill(history, keep=1)
    (path.parent / "calls.log").unlink()
    resumed = SuiteRun.resume(history.interrupted()[0], history=history)
    report = await resumed.run()
    assert [c.name for c in report.cases] == ["keep-0", "keep-1", "bad-keep", "keep-3"]
    assert calls(path.parent) == ["keep-1", "bad-keep", "keep-3"]
    assert report.metadata["run_id"] == history.runs()[0].run_id


async def test_save_baseline_refuses_to_replace_a_corrupt_file(tmp_path):
    path = write_suite(tmp_path)
    baseline = tmp_path / "__baselines__" / "mixed.json"
    baseline.parent.mkdir()
    baseline.write_text("{ not json")
    service = await run_service(path, RunRequest(filter="keep-0"), RunHistory(tmp_path))
    outcome = service.baseline_store.save(service.report, service.coverage)
    assert outcome.status is BaselineStatus.CORRUPT
    assert "corrupt" in outcome.message and str(baseline) in outcome.message
    assert baseline.read_text() == "{ not json"
    baseline.unlink()
    saved = service.baseline_store.save(service.report, service.coverage)
    assert saved.status is BaselineStatus.SAVED
    assert Report.load(baseline).cases[0].name == "keep-0"


async def test_cancelled_run_is_not_saved_as_baseline(tmp_path):
    async def slow(question: str) -> str:
        await anyio.sleep(5)
        return "answer"

    suite = Suite("slow", agent=slow, cases=[Case("q", checks=[contains("answer")])])
    suite.path = tmp_path / "slow.py"
    service = SuiteRun.start(plan_run(suite, RunRequest()), history=None, invocation="t")
    async with anyio.create_task_group() as group:
        group.start_soon(service.run)
        await anyio.sleep(0.05)
        service.cancel()
    assert (
        service.baseline_store.save(service.report, service.coverage).status
        is BaselineStatus.REFUSED
    )
    assert not (tmp_path / "__baselines__").exists()


def test_cli_resume_of_an_app_style_filtered_run(tmp_path):
    """Started by a front-end with a filter, killed, finished by `tui-eval resume`."""
    path = write_suite(tmp_path / "suites")
    history = RunHistory(tmp_path)
    anyio.run(run_service, path, RunRequest(filter="keep"), history)
    simulate_kill(history, keep=2)
    (path.parent / "calls.log").unlink()
    result = cli("resume", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # bad-keep fails
    assert calls(path.parent) == ["bad-keep", "keep-3"]
    assert "eval: 3/4 cases passed" in result.stdout


def test_journal_lines_are_typed_and_versioned(tmp_path):
    path = write_suite(tmp_path)
    history = RunHistory(tmp_path)
    anyio.run(run_service, path, RunRequest(filter="keep-0"), history)
    lines = [json.loads(x) for x in history.runs()[0].journal_path.read_text().splitlines()]
    assert [line["kind"] for line in lines] == ["header", "sample", "end"]
    assert all(line["schema_version"] == JOURNAL_SCHEMA_VERSION for line in lines)


def test_newer_journal_is_a_named_error_for_resume(tmp_path):
    path = write_suite(tmp_path / "suites")
    history = RunHistory(tmp_path)
    anyio.run(run_service, path, RunRequest(filter="keep"), history)
    simulate_kill(history, keep=1)
    journal = history.runs()[0].journal_path
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    for line in lines:
        line["schema_version"] = 7
        line["a_field_from_the_future"] = True
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = cli("resume", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert str(journal) in result.stderr
    assert "schema_version 7" in result.stderr
    assert f"up to {JOURNAL_SCHEMA_VERSION}" in result.stderr
    assert "upgrade tui-eval" in result.stderr
    # The history still lists it, as something this version cannot read.
    assert history.runs()[0].problem is not None


def test_an_earlier_versions_journal_is_refused_naming_the_file(tmp_path):
    """Journals of earlier versions (lines keyed by "t"; a request without `kind`) are listed
    in the history and refused by `resume` with a message naming the journal."""
    path = write_suite(tmp_path / "suites")
    history = RunHistory(tmp_path)
    options = {"filter": "keep", "samples": None, "concurrency": None, "fail_fast": False}
    header = {"run_id": "", "suite": "mixed", "suite_path": str(path), "invocation": "old"}
    for version, first in ((1, {"t": "header"}), (3, {"kind": "header", "schema_version": 3})):
        folder = history.folder / f"2026010{version}-000000-mixed-abcdef"
        folder.mkdir(parents=True)
        line = {**first, **header, "run_id": folder.name, "options": options}
        (folder / "journal.jsonl").write_text(json.dumps(line) + "\n")
        result = cli("resume", cwd=tmp_path)
        assert result.returncode == 2 and calls(path.parent) == [], result.stderr
        assert str(folder / "journal.jsonl") in result.stderr
        assert f"earlier tui-eval (journal schema_version {version}" in result.stderr
        assert history.runs()[0].problem is not None
        (folder / "report.json").write_text("{}")  # an ended run: listed, not resumable
        assert not history.runs()[0].resumable


def test_newer_report_is_a_named_error_for_compare(tmp_path):
    newer = tmp_path / "newer.json"
    newer.write_text(
        json.dumps({"kind": "tui-eval-report", "schema_version": 3, "report": {"x": 1}})
    )
    Report("r").save(tmp_path / "old.json")
    result = cli("compare", str(newer), str(tmp_path / "old.json"), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "newer.json: written by a newer tui-eval (schema_version 3" in result.stderr
    assert "reads up to 1" in result.stderr
