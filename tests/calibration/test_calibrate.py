"""`calibrate()` and `tui-eval calibrate`: the agent is never called, one judge call per
labelled output per judge (cached on a rerun), κ as scikit-learn computes it, exit codes."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.calibration.judge_server import JudgeServer, verdict_for
from tests.lazy import lazy
from tui_eval import Calibration, Case, Suite, calibrate, llm_judge
from tui_eval.agents.providers.openai import OpenAIProvider
from tui_eval.calibration.calibrate import CalibrationError
from tui_eval.calibration.labels import LabelStore, labels_path, new_label
from tui_eval.cli.commands import main

pytestmark = pytest.mark.anyio

metrics = lazy("sklearn.metrics")


CASES = 50
OUTPUTS_PER_CASE = 4  # 200 labelled outputs

SUITE_FILE = """\
import os
from pathlib import Path

from tui_eval import Case, Suite, llm_judge


def agent(question):
    with open(os.environ["AGENT_CALLS"], "a") as calls:
        calls.write("called\\n")
    return "GOOD"


suite = Suite(
    "support",
    agent=agent,
    cases=[
        Case(f"question {i}", name=f"case {i}", checks=[llm_judge("Is it good?", model="openai:judge-a", threshold=0.5)])
        for i in range(50)
    ],
)
"""


def output(case: int, k: int) -> str:
    return f"{'GOOD' if (case + k) % 3 else 'bad'} answer {case}.{k}"


def human_label(case: int, k: int) -> str:
    good = (case + k) % 3 != 0
    flipped = (case * OUTPUTS_PER_CASE + k) % 10 == 0  # the humans disagree with 1 in 10
    return "pass" if good != flipped else "fail"


def write_labels(suite: Suite, cases: int = CASES) -> list[tuple[bool, bool]]:
    """Four labels a case (200 for all 50); returns (human passed, judge will pass) per label."""
    store = LabelStore.of(suite)
    expected = []
    for case in range(cases):
        for k in range(OUTPUTS_PER_CASE):
            label = human_label(case, k)
            store.put(new_label(f"case {case}", "llm_judge", output(case, k), label, labeler="t"))
            expected.append((label == "pass", verdict_for("judge-a", output(case, k)) >= 0.5))
    return expected


@pytest.fixture
def suite_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with JudgeServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("AGENT_CALLS", str(tmp_path / "agent_calls.txt"))
        path = tmp_path / "suites" / "support.py"
        path.parent.mkdir()
        path.write_text(SUITE_FILE)
        yield path, server


async def test_200_labels_no_agent_call_one_judge_call_each_cached_on_rerun(suite_file):
    path, server = suite_file
    expected = write_labels(Suite("support", path=path))
    calibration = await calibrate(path)
    assert not (path.parent.parent / "agent_calls.txt").exists()  # the agent never ran
    assert calibration.n == 200
    assert server.requests == {"judge-a": 200}  # exactly one judge call per output
    assert calibration.judge_requests == 200 and calibration.cached_requests == 0
    human = [h for h, _ in expected]
    judge = [j for _, j in expected]
    assert calibration.kappa == pytest.approx(metrics.cohen_kappa_score(human, judge), abs=1e-12)
    assert calibration.agreement == pytest.approx(0.9)
    assert len(calibration.disagreements) == 20
    low, high = calibration.kappa_ci
    assert low < calibration.kappa < high
    again = await calibrate(path)
    assert server.requests == {"judge-a": 200}  # the rerun asked nobody
    assert again.cached_requests == 200
    assert again.kappa == calibration.kappa and again.kappa_ci == calibration.kappa_ci


def test_cli_exit_codes_and_json(suite_file, tmp_path: Path, capsys):
    path, server = suite_file
    assert main(["calibrate", str(path)]) == 2  # no labels yet
    assert "no labels" in capsys.readouterr().err
    write_labels(Suite("support", path=path), cases=10)  # 40: six calibrations need no more
    out = tmp_path / "calibration.json"
    assert main(["calibrate", str(path), "--json", str(out), "--min-kappa", "0.5"]) == 0
    printed = capsys.readouterr().out
    document = json.loads(out.read_text())
    assert f"κ {document['kappa']:.2f}" in printed
    for key in (
        "n",
        "agreement",
        "kappa",
        "kappa_ci",
        "weighted_kappa",
        "tpr",
        "tnr",
        "confusion",
        "disagreements",
        "by_check",
        "judges_alpha",
    ):
        assert key in document
    assert document["n"] == 40 and set(document["confusion"]) == {"tp", "fp", "fn", "tn"}
    assert document["by_check"]["llm_judge"]["kappa"] == document["kappa"]
    assert main(["calibrate", str(path), "--min-kappa", "0.95"]) == 1
    assert main(["calibrate", str(path), "--check", "nope"]) == 2
    assert "no labels for check 'nope'" in capsys.readouterr().err
    assert server.requests == {"judge-a": 40}  # four calibrations, one judging
    # Another judge on the same labels: one call each, its own κ.
    assert main(["calibrate", str(path), "--judge", "openai:wrong-b", "--json", str(out)]) == 0
    assert server.requests["wrong-b"] == 40
    assert json.loads(out.read_text())["kappa"] < 0


async def test_score_labels_pass_at_the_threshold_and_give_a_weighted_kappa(tmp_path: Path):
    with JudgeServer() as server:
        judge = llm_judge(
            "good?", model=OpenAIProvider("judge-a", base_url=server.url), threshold=0.8
        )
        suite = Suite("s", cases=[Case("q", name="c", checks=[judge])], path=tmp_path / "s.py")
        store = LabelStore.of(suite)
        # judge: GOOD → 0.9 (pass at 0.8), else 0.2
        for i, (text, label) in enumerate(
            [("GOOD a", 0.9), ("GOOD b", 0.7), ("bad c", 0.2), ("bad d", 0.0), ("GOOD e", 1.0)]
        ):
            store.put(new_label("c", "llm_judge", f"{text} {i}", label))
        calibration = await calibrate(suite, cache="off")
    # 0.7 is below the check's 0.8: a human "fail" the judge passed.
    assert calibration.confusion == {"tp": 2, "fp": 1, "fn": 0, "tn": 2}
    assert calibration.weighted_kappa is not None and 0 < calibration.weighted_kappa < 1
    (disagreement,) = calibration.disagreements
    assert disagreement.record.label == 0.7 and disagreement.judge.score_text == "score 0.90 ≥ 0.80"


async def test_a_label_for_a_gone_case_or_check_is_skipped_and_said(tmp_path: Path):
    judge = llm_judge("good?", model="openai:x")
    suite = Suite("s", cases=[Case("q", name="c", checks=[judge])], path=tmp_path / "s.py")
    store = LabelStore.of(suite)
    store.put(new_label("gone", "llm_judge", "o", "pass"))
    store.put(new_label("c", "other", "o", "pass"))
    calibration = await calibrate(suite)
    assert calibration.n == 0 and math.isnan(calibration.kappa)
    assert any("'gone'" in s for s in calibration.skipped)
    assert any("no check 'other'" in s for s in calibration.skipped)
    assert calibration.failing_kappas(0.0)  # an undefined κ fails a gate closed


async def test_judge_for_a_plain_check_or_a_bad_labels_file_is_a_calibration_error(tmp_path: Path):
    suite = Suite(
        "s", cases=[Case("q", name="c", checks=[lambda run: True])], path=tmp_path / "s.py"
    )
    LabelStore.of(suite).put(new_label("c", "<lambda>", "o", "pass"))
    with pytest.raises(CalibrationError, match="not an llm_judge"):
        await calibrate(suite, judge="openai:x")
    labels_path(suite).write_text("{oops\n")
    with pytest.raises(CalibrationError, match="line 1"):
        await calibrate(suite)
    assert isinstance(
        await calibrate(suite, labels=[new_label("c", "<lambda>", "o", "pass")]), Calibration
    )


def test_summary_never_shows_minus_zero():
    """A bootstrap bound of float noise below 0 reads 0.00, not -0.00."""
    calibration = Calibration(
        n=3,
        agreement=2 / 3,
        kappa=0.39999999999999986,
        kappa_ci=(-3.3306690738754706e-16, 1.0),
        weighted_kappa=None,
        tpr=0.5,
        tnr=1.0,
        confusion={"tp": 1, "fp": 0, "fn": 1, "tn": 1},
    )
    assert "κ 0.40 (95% CI 0.00 to 1.00)" in calibration.summary()


def test_calibrate_help_shows_a_single_percent_sign(capsys):
    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    out = capsys.readouterr().out
    assert "95% interval" in " ".join(out.split()) and "%%" not in out


RULE_JUDGE_SUITE = """\
import anyio

from tui_eval import Case, Suite, llm_judge
from tui_eval.agents.messages import Completion
from tui_eval.agents.providers.scripted import ScriptedProvider
from tui_eval.checks.judge import verdict_reply


def verdict(messages):
    answer = messages[-1].content.split("<answer>")[-1]
    if "raise" in answer:
        raise RuntimeError("the judge's server is down")
    if "garbage" in answer:
        return Completion(content="not a verdict")
    return Completion(content=verdict_reply(0.9 if "GOOD" in answer else 0.2, "by rule"))


def judge():
    return ScriptedProvider([verdict], name="rule-judge")


class Hanging:
    name = "hanging-judge"

    async def complete(self, messages, tools, *, output_schema=None, settings=None):
        await anyio.sleep_forever()


suite = Suite(
    "rules",
    agent=lambda q: q,
    cases=[
        Case("q", name="c", checks=[llm_judge("Good?", model=judge, threshold=0.5)]),
        Case("q", name="slow", timeout=0.5, checks=[llm_judge("Good?", model=Hanging())]),
    ],
)
"""


@pytest.fixture
def rule_suite(tmp_path: Path) -> Path:
    path = tmp_path / "suites" / "rules.py"
    path.parent.mkdir()
    path.write_text(RULE_JUDGE_SUITE)
    return path


def label(path: Path, *labels: tuple[str, str], case: str = "c") -> None:
    store = LabelStore.of(Suite("rules", path=path))
    for output, verdict in labels:
        store.put(new_label(case, "llm_judge", output, verdict))


AGREEING = [("GOOD 1", "pass"), ("GOOD 2", "pass"), ("bad 3", "fail"), ("bad 4", "fail")]


async def test_a_judge_that_raises_or_replies_no_verdict_gives_no_verdict(rule_suite):
    # The humans failed these outputs: a judge error counted as "fail" agreed with them.
    label(rule_suite, *AGREEING, ("raise 5", "fail"), ("garbage 6", "fail"))
    calibration = await calibrate(rule_suite)
    assert calibration.n == 4 and calibration.kappa == 1.0  # only the real verdicts count
    errors = {e.record.output: e.error for e in calibration.errors}
    assert set(errors) == {"raise 5", "garbage 6"}
    assert "RuntimeError: the judge's server is down" in errors["raise 5"]
    assert "not a valid verdict" in errors["garbage 6"]
    assert not calibration.passes() and not calibration.passes(min_kappa=0.5)
    assert "judge errors: 2 labelled outputs not judged" in calibration.summary()
    assert [e["case"] for e in calibration.as_dict()["errors"]] == ["c", "c"]


def test_the_cli_fails_on_a_judge_error_and_names_it(rule_suite, tmp_path: Path, capsys):
    label(rule_suite, *AGREEING, ("raise 5", "fail"))
    out = tmp_path / "calibration.json"
    assert main(["calibrate", str(rule_suite), "--min-kappa", "0.5", "--json", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "the judge raised RuntimeError: the judge's server is down" in printed
    assert "failing: the judge gave no verdict on 1 labelled output" in printed
    assert json.loads(out.read_text())["errors"][0]["error"].startswith("the judge raised")
    assert main(["calibrate", str(rule_suite)]) == 1  # with or without a κ gate


async def test_a_hung_judge_is_an_error_after_its_cases_timeout(rule_suite):
    label(rule_suite, ("anything", "pass"), case="slow")
    with anyio.fail_after(60):  # a stuck guard: the case's timeout is half a second
        calibration = await calibrate(rule_suite)
    (error,) = calibration.errors
    assert error.error == "the judge gave no verdict within the case's timeout of 0.5s"
    assert calibration.n == 0 and not calibration.passes()


def test_a_judge_spec_that_cannot_be_resolved_is_a_usage_error(rule_suite, capsys):
    label(rule_suite, *AGREEING)
    assert main(["calibrate", str(rule_suite), "--judge", "python:no_such_module:x"]) == 2
    err = capsys.readouterr().err
    assert "--judge" in err and "no_such_module" in err
    assert main(["calibrate", str(rule_suite), "--judge", "nope:model"]) == 2


@pytest.mark.parametrize("bar", ["nan", "inf", "-inf", "1.5", "-2", "high"])
def test_min_kappa_must_be_a_number_from_minus_one_to_one(rule_suite, bar: str, capsys):
    label(rule_suite, *AGREEING)
    with pytest.raises(SystemExit) as exited:
        main(["calibrate", str(rule_suite), "--min-kappa", bar])
    assert exited.value.code == 2 and "--min-kappa" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("labels", "reason"),
    [
        ([("GOOD 1", "pass"), ("bad 2", "pass"), ("GOOD 3", "pass")], "the humans"),
        ([("GOOD 1", "pass"), ("GOOD 2", "fail"), ("GOOD 3", "pass")], "the judge"),
    ],
)
def test_kappa_with_one_verdict_on_either_side_is_undefined_and_fails_the_gate(
    rule_suite, tmp_path: Path, capsys, labels, reason: str
):
    label(rule_suite, *labels)
    out = tmp_path / "calibration.json"
    assert main(["calibrate", str(rule_suite), "--min-kappa", "0", "--json", str(out)]) == 1
    printed = capsys.readouterr().out
    assert f"κ undefined ({reason} gave one verdict only)" in printed
    assert "0.00" not in printed.splitlines()[0]
    document = json.loads(out.read_text())
    assert document["kappa"] is None and document["kappa_ci"] == [None, None]


def test_the_json_holds_no_float_noise():
    calibration = Calibration(
        n=3,
        agreement=2 / 3,
        kappa=0.39999999999999986,
        kappa_ci=(-3.3306690738754706e-16, 1.0000000000000002),
        weighted_kappa=-0.0,
        tpr=0.5,
        tnr=1.0,
        confusion={"tp": 1, "fp": 0, "fn": 1, "tn": 1},
    )
    document = calibration.as_dict()
    assert document["kappa_ci"] == [0.0, 1.0] and document["kappa"] == 0.4
    assert "e-16" not in json.dumps(document) and "-0.0" not in json.dumps(document)


def test_one_labelled_output_is_one(rule_suite):
    calibration = Calibration(
        n=1,
        agreement=1.0,
        kappa=math.nan,
        kappa_ci=(math.nan, math.nan),
        weighted_kappa=None,
        tpr=1.0,
        tnr=math.nan,
        confusion={"tp": 1, "fp": 0, "fn": 0, "tn": 0},
    )
    assert calibration.summary().startswith("1 labelled output · κ undefined")


def test_calibrate_into_a_pipe_whose_reader_left_ends_quietly(rule_suite):
    """`tui-eval calibrate … | head`: the reader goes before the report is written."""
    label(rule_suite, *AGREEING)
    # As in a user's shell: stdout into a pipe is block-buffered, so without care the report
    # is written by the interpreter's last flush, after the CLI's own handling is over.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    read, write = os.pipe()
    os.close(read)  # the reader has gone
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tui_eval", "calibrate", str(rule_suite)],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert "BrokenPipeError" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr == ""
