"""A suite's baseline and labels file names: one per suite name, within the file system's
255 bytes, checkable-out on Windows — and the files earlier versions named stay found."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from tests.cli_in_process import cli
from tui_eval import Case, Suite, contains
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.report import Report
from tui_eval.suites.suite import suite_file_stem

NAME_MAX = 255
"""The longest file name (in bytes) of ext4, APFS, XFS, btrfs; NTFS counts 255 UTF-16
units, never more than the UTF-8 bytes."""
TEMP_AFFIXES = len(".") + len(".12345678.tmp")
"""What an atomic write adds to the name of its temporary file."""
WINDOWS_RESERVED = {"con", "prn", "aux", "nul"} | {
    f"{device}{n}" for device in ("com", "lpt") for n in "0123456789¹²³"
}

TRICKY = [
    "chat/en",
    "chat:en",
    "chat_en",
    "chat en",
    "chat\\en",
    "chat?en",
    "chat*en",
    "chat|en",
    'chat"en',
    "chat<en>",
    "chat\x1ben",
    "chat\nen",
    " chat_en",
    "chat_en ",
    ".chat_en",
    "..",
    ".",
    "",
    "~",
    "chat_en~0123456789abcdef",
    "é",
    "e\u0301",  # the same letter, decomposed (macOS file systems fold the two)
    "名" * 40,
    "名" * 200,
    "名" * 200 + "!",
    "x" * 300,
    "x" * 300 + "y",
    "x" * 120,
    "x" * 121,
    *sorted(WINDOWS_RESERVED),
    "CON",
    "Con.txt",
    "nul.json",
    "aux ",
    "com1.x",
    "con/x",
    "lpt1 .y",
    "a\ud800b",  # a lone surrogate (Python allows it in a str)
]


def windows_safe(stem: str) -> bool:
    if re.search(r'[<>:"/\\|?*\x00-\x1f]', stem) or stem.endswith((" ", ".")):
        return False
    first = stem.split(".", 1)[0].rstrip(" ").casefold()
    return first not in WINDOWS_RESERVED


def test_every_suite_name_gets_its_own_file_name():
    stems = [suite_file_stem(name) for name in TRICKY]
    clash = {s for s in stems if stems.count(s) > 1}
    assert not clash, [(n, s) for n, s in zip(TRICKY, stems, strict=True) if s in clash]


@pytest.mark.parametrize("name", TRICKY, ids=lambda name: repr(name)[:24])
def test_a_stem_is_byte_bounded_windows_safe_and_stays_in_its_folder(name):
    stem = suite_file_stem(name)
    size = len(stem.encode("utf-8"))
    assert size + len(".jsonl") + TEMP_AFFIXES <= NAME_MAX, (name, size)
    assert windows_safe(stem), stem
    assert stem not in ("", ".", "..") and not stem.startswith(".")
    assert unicodedata.is_normalized("NFC", stem)


@pytest.mark.parametrize(
    "name", ["demo", "calculator", "support bot", "geo-tools_v2.1", "日本語のテスト", "x" * 120]
)
def test_a_simple_name_keeps_the_file_it_always_had(name):
    assert suite_file_stem(name) == name


def test_no_suite_takes_the_file_name_of_the_baselines_folder_quarantine_file():
    from tui_eval.report.quarantine import FILE_NAME

    for name in ("quarantine", "Quarantine", "QUARANTINE"):
        assert f"{suite_file_stem(name)}.json".casefold() != FILE_NAME.casefold(), name


def save_run(suite: Suite, outcome: str = "passed") -> Report:
    from tui_eval.report.baselines import BaselineStore

    case = CaseResult("q", [SampleResult("q", 0, outcome)], planned=1)
    report = Report(suite.name, [case])
    outcome_ = BaselineStore.for_suite(suite).save(report)
    assert outcome_.path is not None and outcome_.path.exists(), outcome_.message
    return report


def suite_at(tmp_path: Path, name: str) -> Suite:
    suite = Suite(name, agent=print)
    suite.path = tmp_path / "suites" / "s.py"
    return suite


def test_suites_whose_names_once_shared_a_file_keep_their_own_baselines(tmp_path):
    slash, colon = suite_at(tmp_path, "chat/en"), suite_at(tmp_path, "chat:en")
    save_run(slash, "passed")
    save_run(colon, "failed")
    assert slash.baseline_path != colon.baseline_path
    assert Report.load(slash.baseline_path).passed
    assert not Report.load(colon.baseline_path).passed


def test_a_long_cjk_name_saves_its_baseline(tmp_path):
    suite = suite_at(tmp_path, "評価" * 150)
    save_run(suite)
    assert Report.load(suite.baseline_path).name == suite.name


def test_a_baseline_an_earlier_version_named_is_read_in_place_and_moved_by_a_save(tmp_path):
    """Before names were made distinct, `chat/en` saved to `chat_en.json` and names over
    120 characters were cut: those files are read by the suite whose report they hold (and
    only by it), never renamed by looking, and moved to the new name by the first save."""
    from tui_eval.report.baselines import BaselineStatus, BaselineStore

    folder = tmp_path / "suites" / "__baselines__"
    folder.mkdir(parents=True)
    long_name = "y" * 150
    olds = (("chat/en", "chat_en"), (long_name, "y" * 120), ("con", "con"))
    for name, legacy in olds:
        case = CaseResult("q", [SampleResult("q", 0, "passed")], planned=1)
        Report(name, [case]).save(folder / f"{legacy}.json")
    colon = BaselineStore.for_suite(suite_at(tmp_path, "chat:en"))  # shared chat_en.json
    assert colon.read().status is BaselineStatus.MISSING  # ... but the file is not its
    before = sorted(p.name for p in folder.iterdir())
    for name, legacy in olds:
        store = BaselineStore.for_suite(suite_at(tmp_path, name))
        assert store.path.name != f"{legacy}.json" and store.source == folder / f"{legacy}.json"
        assert store.read().baseline is not None and store.read().baseline.name == name
    assert sorted(p.name for p in folder.iterdir()) == before  # reading moved nothing
    for name, _ in olds:
        save_run(suite_at(tmp_path, name), "failed")
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{suite_file_stem(n)}.json" for n, _ in olds
    )
    for name, _ in olds:
        store = BaselineStore.for_suite(suite_at(tmp_path, name))
        assert store.earlier is None and not Report.load(store.path).passed


SUITE = """
import os
from tui_eval import Case, Suite, contains

WRONG = os.environ.get("WRONG", "")

async def agent(question: str) -> str:
    return "wrong" if question == WRONG else "answer"

slash = Suite("chat/en", agent=agent, cases=[Case("q1", checks=[contains("answer")])])
colon = Suite("chat:en", agent=agent, cases=[Case("q2", checks=[contains("answer")])])
"""


def test_the_cli_gates_each_suite_on_its_own_baseline(tmp_path):
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "chat_suite.py").write_text(SUITE)
    assert cli("run", "suites", "--headless", "--save-baseline", cwd=tmp_path).returncode == 0
    again = cli("run", "suites", "--headless", "--fail-on", "regressions,removed", cwd=tmp_path)
    assert again.returncode == 0, again.stdout
    assert again.stdout.count("0 added, 0 removed, 1 unchanged") == 2, again.stdout
    regressed = cli("run", "suites", "--headless", cwd=tmp_path, env={"WRONG": "q1"})
    assert regressed.returncode == 1 and "1 regression(s)" in regressed.stdout
    # `compare` without a baseline finds each suite's own file too.
    cli("run", "suites", "--headless", "--json", "now.json", cwd=tmp_path, env={"WRONG": "q2"})
    compared = cli("compare", "now.json", cwd=tmp_path)
    assert compared.returncode == 1 and "chat:en / q2" in compared.stdout, compared.stdout
    assert "0 added, 0 removed" in compared.stdout
    # A folder of baselines an earlier version wrote (chat_en.json for chat/en) is read
    # as it is: comparing moves nothing.
    old = tmp_path / "old"
    old.mkdir()
    baseline = tmp_path / "suites" / "__baselines__" / f"{suite_file_stem('chat/en')}.json"
    (old / "chat_en.json").write_bytes(baseline.read_bytes())
    (old / f"{suite_file_stem('chat:en')}.json").write_bytes(
        baseline.with_name(f"{suite_file_stem('chat:en')}.json").read_bytes()
    )
    from_old = cli("compare", "now.json", "--baseline-dir", "old", cwd=tmp_path)
    assert from_old.returncode == 1 and "old/chat_en.json" in from_old.stdout, from_old.stderr
    assert (old / "chat_en.json").exists()


def test_labels_of_a_suite_an_earlier_version_named_are_kept(tmp_path):
    from tui_eval.calibration.labels import LabelStore, labels_path, new_label

    folder = tmp_path / "suites" / "__labels__"
    folder.mkdir(parents=True)
    suite = suite_at(tmp_path, "chat/en")
    suite.cases = [Case("q", name="q", checks=[contains("a")])]
    legacy = folder / "chat_en.jsonl"
    label = new_label("q", "judge", "an output", "pass", labelled_at=1.0)
    legacy.write_text(label.model_dump_json() + "\n")
    other = suite_at(tmp_path, "chat:en")  # its cases are not the labels' cases
    other.cases = [Case("r", name="r", checks=[contains("a")])]
    assert len(LabelStore.of(other)) == 0 and legacy.exists()
    assert labels_path(suite) != legacy
    store = LabelStore.of(suite)
    assert len(store) == 1 and legacy.exists()  # reading moves nothing
    store.put(new_label("q", "judge", "another output", "fail", labelled_at=2.0))
    assert not legacy.exists()  # the first write moves it, keeping the earlier label
    assert len(LabelStore.of(suite)) == 2 and labels_path(suite).exists()
