from __future__ import annotations

import json
import math

import pydantic
import pytest

from tui_eval import Agent, Case, Report, contains, evaluate, matches, tool_called
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.report import ReportFileError
from tui_eval.stats.proportions import fisher_exact, pass_at_k
from tui_eval.testing import ScriptedProvider, call, text

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [
        (1, 0, 1),
        (1, 1, 1),
        (4, 2, 1),
        (4, 2, 2),
        (4, 2, 3),
        (10, 3, 5),
        (10, 0, 10),
        (10, 10, 1),
        (20, 7, 4),
    ],
)
def test_pass_at_k_matches_formula(n, c, k):
    expected = 1 - math.comb(n - c, k) / math.comb(n, k) if n - c >= k else 1.0
    case = CaseResult(
        "x", [SampleResult("x", i, "passed" if i < c else "failed") for i in range(n)]
    )
    assert case.pass_at_k(k) == pytest.approx(expected)
    with pytest.raises(ValueError, match=f"k={n + 1} with n={n}"):
        case.pass_at_k(n + 1)
    with pytest.raises(ValueError):
        pass_at_k(n, c, 0)


def test_fisher_exact_against_reference_values():
    # Reference p-values from scipy.stats.fisher_exact (two-sided).
    assert fisher_exact(4, 0, 0, 4) == pytest.approx(0.028571, abs=1e-5)
    assert fisher_exact(2, 2, 4, 0) == pytest.approx(0.428571, abs=1e-5)
    assert fisher_exact(1, 9, 11, 3) == pytest.approx(0.002759, abs=1e-5)
    assert fisher_exact(0, 1, 1, 0) == pytest.approx(1.0)
    assert fisher_exact(0, 0, 0, 0) == 1.0


class Answer(pydantic.BaseModel):
    city: str
    confidence: float


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque thing>"


def add(a: int, b: int) -> int:
    return a + b


async def make_report() -> Report:
    agent = Agent(ScriptedProvider([]), tools=[add])
    cases = [
        Case(
            "sum",
            checks=[tool_called("add"), contains("5")],
            model=ScriptedProvider.factory([call("add", {"a": 2, "b": 3}), text("5")]),
            samples=2,
        ),
        Case(
            "structured",
            checks=[matches({"city": "Paris"})],
            output_type=Answer,
            model=ScriptedProvider([text('{"city": "Paris", "confidence": 0.9}')]),
        ),
        Case(
            "wrong",
            checks=[contains("Berlin")],
            model=ScriptedProvider([text("Paris")]),
            metadata={"tag": "geo"},
        ),
    ]
    return await evaluate(agent, cases, name="demo", price=lambda u: u.total_tokens * 1e-6)


async def test_save_load_round_trip(tmp_path):
    report = await make_report()
    path = report.save(tmp_path / "r.json")
    loaded = Report.load(path)
    assert str(loaded) == str(report)
    assert loaded.name == "demo" and loaded.cost == pytest.approx(report.cost)
    s0 = loaded.cases[0].samples[0]
    assert s0.run.tool_calls[0].result == 5 and s0.run.tool_names == ["add"]
    assert [m.role for m in s0.run.messages] == ["user", "assistant", "tool", "assistant"]
    assert s0.usage == report.cases[0].samples[0].usage
    assert loaded.cases[1].samples[0].output == {"city": "Paris", "confidence": 0.9}
    assert loaded.cases[2].metadata == {"tag": "geo"}
    assert (
        loaded.cases[2].samples[0].checks[0].reason == report.cases[2].samples[0].checks[0].reason
    )
    assert loaded.compare(report).ok and not loaded.compare(report).regressions


async def test_unserialisable_output_is_stored_as_repr(tmp_path):
    async def agent(q: str) -> Opaque:
        return Opaque()

    report = await evaluate(agent, [Case("q")])
    loaded = Report.load(report.save(tmp_path / "r.json"))
    assert loaded.cases[0].samples[0].output == "<Opaque thing>"


async def test_load_errors_name_the_file(tmp_path):
    report = await make_report()
    data = report.to_json()
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReportFileError, match=r"truncated\.json: not valid JSON"):
        Report.load(truncated)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(ReportFileError, match=r"other\.json: not a tui-eval report"):
        Report.load(other)
    newer = tmp_path / "newer.json"
    document = json.loads(data)
    document["schema_version"] = 99
    newer.write_text(json.dumps(document))
    with pytest.raises(
        ReportFileError, match=r"newer\.json: written by a newer tui-eval \(schema_version 99"
    ):
        Report.load(newer)
    broken = tmp_path / "broken.json"
    document["schema_version"] = 1
    document["report"]["cases"][0]["samples"] = "nope"
    broken.write_text(json.dumps(document))
    with pytest.raises(
        ReportFileError, match=r"broken\.json: invalid report: field 'report\.cases\.0\.samples'"
    ):
        Report.load(broken)
    with pytest.raises(ReportFileError, match="missing.json: cannot read"):
        Report.load(tmp_path / "missing.json")


def _case(name: str, outcomes: str, threshold: float = 1.0) -> CaseResult:
    return CaseResult(
        name,
        [SampleResult(name, i, "passed" if o == "p" else "failed") for i, o in enumerate(outcomes)],
        pass_threshold=threshold,
        planned=len(outcomes),
    )


def test_compare_regressions_improvements_added_removed():
    baseline = Report(
        "b", [_case("a", "pppp"), _case("b", "ffff"), _case("c", "p"), _case("gone", "p")]
    )
    current = Report(
        "c", [_case("a", "ffff"), _case("b", "pppp"), _case("c", "pf", 0.5), _case("new", "p")]
    )
    diff = current.compare(baseline)
    assert [c.name for c in diff.regressions] == ["a"]
    assert [c.name for c in diff.improvements] == ["b"]
    assert diff.added == ["new"] and diff.removed == ["gone"] and diff.unchanged == ["c"]
    assert not diff.ok
    a = diff.regressions[0]
    assert (a.baseline_rate, a.current_rate) == (1.0, 0.0)
    assert a.p_value == pytest.approx(0.0286, abs=1e-3)
    # Three cases were compared: Holm's adjustment keeps the family's error at 5%.
    # ...and at 0.05 / 3 no 4-vs-4 table can be significant (Fisher needs 5 a side).
    assert a.adjusted_p_value == pytest.approx(0.0857, abs=1e-3) and a.label == "too few samples"
    text_ = str(diff)
    assert text_.startswith("pass rate 67% → 50%, Δ −17 pts [−100, +100], p=1.000")
    assert "1 regression(s), 1 improvement(s), 1 added, 1 removed" in text_
    assert (
        "✗ regressed" in text_
        and "100% → 0% (4/4 → 0/4; too few samples; ~5 per side would tell (this case))" in text_
    )


def test_flaky_change_is_labelled_noise():
    baseline = Report("b", [_case("flaky", "pppf", 0.75)])
    current = Report("c", [_case("flaky", "ppff", 0.75)])
    change = current.compare(baseline).regressions[0]
    assert not change.significant and change.flaky
    # 3/4 -> 2/4 could never be told from noise with four samples a side.
    # Fisher's exact power at 0.75 vs 0.5, α = 0.05: 0.802 at 64 a side, 0.794 at 63.
    assert change.label == "too few samples" and change.samples_needed == 64
    assert "too few samples; ~64 per side would tell" in change.describe()
    assert "flaky" in change.describe()


def test_duplicate_names_raise():
    dup = Report("d", [_case("a", "p"), _case("a", "f")])
    with pytest.raises(ValueError, match="duplicate case names"):
        dup.compare(Report("b", [_case("a", "p")]))


def test_summary_shows_errors_and_strips_escape_codes():
    sample = SampleResult("bad", 0, "error", error="RuntimeError: \x1b[31mred\x1b[0m")
    report = Report("r", [CaseResult("bad", [sample], planned=2)], cancelled=True)
    printed = str(report)
    assert "\x1b" not in printed
    assert "error: RuntimeError:" in printed and "(of 2 planned)" in printed
    assert "cancelled" in printed.splitlines()[0]


def test_assert_pass_rate_lists_failures():
    report = Report("r", [_case("good", "p"), _case("bad", "f")])
    report.assert_pass_rate(0.5)
    with pytest.raises(AssertionError, match="(?s)50% is below 90%.*✗ bad"):
        report.assert_pass_rate(0.9)


def test_a_report_written_before_typed_files_still_loads(tmp_path):
    """What version 0.1.0 wrote, byte for byte in shape: the envelope joined as bytes."""
    old = (
        b'{"kind":"tui-eval-report","schema_version":1,"report":'
        b'{"name":"calc","cases":[{"name":"2 + 3?","samples":[{"case_name":"2 + 3?","index":0,'
        b'"status":"passed","checks":[{"name":"contains","passed":true,"score":1.0,"reason":"",'
        b'"usage":null}],"run":{"output":"5","messages":[],"tool_calls":[],"usage":'
        b'{"input_tokens":3,"output_tokens":1,"requests":1},"turns":1,"latency_ms":2.0},'
        b'"usage":{"input_tokens":3,"output_tokens":1,"requests":1},"judge_usage":'
        b'{"input_tokens":0,"output_tokens":0,"requests":0},"latency_ms":2.0,"cost":null,'
        b'"error":null,"traceback":null}],"pass_threshold":1.0,"planned":1,"input":"2 + 3?",'
        b'"expected":null,"expected_tools":null,"metadata":{}}],"started_at":1.0,'
        b'"duration_s":0.5,"cancelled":false,"priced":false,"metadata":{}}}'
    )
    path = tmp_path / "old.json"
    path.write_bytes(old)
    report = Report.load(path)
    assert report.passed and report.cases[0].samples[0].output == "5"
    assert report.usage.total_tokens == 4


def test_reprs_are_short_whatever_the_size():
    """Big dataclass reprs cost `asyncio.run(evaluate(...))` seconds (asyncio formats the
    main task when it restores its SIGINT handler) and flood debuggers and tracebacks."""
    from tui_eval.run.evaluators import EvalReport

    samples = [SampleResult("case", i, "passed") for i in range(1000)]
    report = Report("eval", [CaseResult("case", samples, planned=1000)] * 50)
    assert repr(report) == "<Report 'eval' 50 cases · 50,000 samples · passed=True>"
    assert repr(report.cases[0]) == "<CaseResult 'case' 1000/1000 samples passed · passed=True>"
    assert repr(samples[3]) == "<SampleResult 'case' #3 passed>"
    assert repr(EvalReport("acc")).startswith("<EvalReport 'acc' 0 cases")


def test_a_sample_without_a_required_field_is_an_error_never_a_pass(tmp_path):
    good = Report("r", [_case("a", "p")])
    document = json.loads(good.to_json())
    del document["report"]["cases"][0]["samples"][0]["status"]
    path = tmp_path / "no_status.json"
    path.write_text(json.dumps(document))
    with pytest.raises(
        ReportFileError, match=r"no_status\.json: invalid report: .*status.*Field required"
    ):
        Report.load(path)


def test_absurd_nesting_is_a_named_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"kind": "tui-eval-report", "schema_version": 1, "report": ' + "[" * 100_000)
    with pytest.raises(ReportFileError, match=r"deep\.json: "):
        Report.load(path)


# -- round three: a compare of thousands of cases is quick -----------------------------------
def _many(count: int, per_case: int, shift: float) -> Report:
    import random

    rng = random.Random(42 + int(shift * 100))
    cases = []
    for i in range(count):
        p = (i % 10) / 10 + shift
        outcomes = "".join("p" if rng.random() < p else "f" for _ in range(per_case))
        cases.append(_case(f"c{i}", outcomes, 0.6))
    return Report("r", cases)


def test_compare_runs_no_samples_needed_search(monkeypatch):
    """The exact search for `samples_needed` ran for every case inside every compare (200
    cases × 5 samples: 10 s). The label needs only the power at the samples there are; the
    figure is searched when read, once."""
    import tui_eval.stats.proportions as proportions

    searched: list[tuple[float, float]] = []
    search = proportions._exact_samples_needed

    def counting(p1, p2, *args):
        searched.append((p1, p2))
        return search(p1, p2, *args)

    monkeypatch.setattr(proportions, "_exact_samples_needed", counting)
    diff = _many(200, 5, 0.05).compare(_many(200, 5, 0.0))
    assert len(diff.changes) == 200 and not searched
    few = [c for c in diff.changes if c.label == "too few samples"]
    assert few and all(c.samples_needed > min(c.baseline_total, c.current_total) for c in few)
    assert 0 < len(searched) <= len(few)
    read = len(searched)
    assert [c.samples_needed for c in few] and len(searched) == read  # kept once found


def test_too_few_samples_means_the_power_at_the_samples_there_are_is_short():
    from tui_eval.stats.proportions import fisher_power

    diff = _many(60, 6, 0.1).compare(_many(60, 6, 0.0))
    level = 0.05 / len(diff.changes)
    for change in diff.changes:
        if change.label == "significant" or change.baseline_rate == change.current_rate:
            continue
        fewest = min(change.baseline_total, change.current_total)
        power = fisher_power(change.baseline_rate, change.current_rate, fewest, level)
        assert (change.label == "too few samples") == (power < 0.8)
