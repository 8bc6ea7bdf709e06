"""The bundled retail suite (`suites/retail.py`) runs offline and fails where it says it does:
one conversation by the agent's fault, one by the user's, the other four pass."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.cli_in_process import cli
from tui_eval.report.report import Report

SUITES = Path(__file__).resolve().parents[1] / "suites"

# case: (status, fault party, fault turn, left out, how the conversation ended)
DESIGNED = {
    "cancel a pending order": ("passed", None, None, False, "user"),
    "return one item": ("passed", None, None, False, "user"),
    "where is my order (read only)": ("passed", None, None, False, "user"),
    "hand over to a person": ("passed", None, None, False, "handoff"),
    "cancels the wrong order (agent's fault)": ("failed", "agent", 1, False, "user"),
    "leaves before confirming (user's fault)": ("failed", "user", 1, True, "user"),
}


def test_the_retail_suite_fails_by_design_once_by_the_agent_and_once_by_the_user(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "suites"
    folder.mkdir()
    for name in ("retail.py", "retail_model.py"):
        shutil.copy(SUITES / name, folder / name)

    out = cli("run", "suites/retail.py", "--headless", "--json", "report.json", cwd=tmp_path)

    assert out.returncode == 1, out.stderr  # the agent's failure fails the run
    assert "1 sample left out: the user simulator's fault" in out.stdout
    report = Report.load(tmp_path / "report.json")
    found = {}
    for case in report.cases:
        (sample,) = case.samples
        fault = sample.fault
        found[case.name] = (
            sample.status,
            fault.party if fault else None,
            fault.turn if fault else None,
            sample.excluded,
            sample.run.conversation.ended_by,
        )
    assert found == DESIGNED

    by_name = {case.name: case for case in report.cases}
    wrong = by_name["cancels the wrong order (agent's fault)"]
    assert wrong.counted == 1 and not wrong.passed
    reason = wrong.samples[0].checks[0].reason
    assert "orders.A-1004.status: expected 'pending', got 'cancelled'" in reason
    assert "orders.A-1005.status: expected 'cancelled', got 'pending'" in reason
    left = by_name["leaves before confirming (user's fault)"]
    assert left.left_out == 1 and left.counted == 0 and left.undecided
    assert "waiting for its answer" in left.samples[0].fault.reason

    # Reads leave the state as it was; the refund written as 40.0 equals the expected 40.
    read_only = by_name["where is my order (read only)"].samples[0].run
    assert all(not turn.changes for turn in read_only.conversation.turns)
    cancelled = by_name["cancel a pending order"].samples[0].run
    assert cancelled.state["orders"]["A-1002"]["refund"] == 40.0
    assert [len(turn.changes) for turn in cancelled.conversation.turns] == [0, 4, 0]
