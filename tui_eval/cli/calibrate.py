"""`tui-eval calibrate PATH`: is the judge right? Judge–human agreement, gated for CI — and
the fault reviewer's, from fault labels."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import anyio

from tui_eval.calibration.calibrate import CalibrationError, calibrate
from tui_eval.calibration.results import Calibration
from tui_eval.checks.faults import FAULT_CHECK
from tui_eval.cli.exit_codes import EXIT_FAILED, EXIT_OK, exit_code_for
from tui_eval.util.atomic import atomic_write_bytes
from tui_eval.util.text import one_line, sanitize, value_text

SHOWN_DISAGREEMENTS = 20


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `calibrate` subcommand's arguments."""
    parser = sub.add_parser(
        "calibrate",
        help="re-judge human-labelled outputs; judge–human agreement (κ) for CI",
        description="Re-judge every output labelled in <suite folder>/__labels__/<suite>.jsonl "
        "(the agent is never called; judge answers are cached) and report Cohen's κ with a "
        "95% interval (one that holds at small label counts), agreement, TPR/TNR (human pass = "
        "positive), the confusion matrix and the disagreements. Fault labels (who failed a "
        "conversation) calibrate the fault reviewer the same way: each labelled conversation is "
        "reviewed again (the rules first: those they decide are counted and left out), with "
        "Cohen's κ over the user, the agent and the environment and the confusion matrix by "
        "party. Exit 0; 1 when the judge (or reviewer) gave no verdict on a label (it raised, "
        "timed out or replied no verdict) or a κ is below --min-kappa (or undefined); 2 on "
        "usage errors or when there are no labels for the check.",
    )
    parser.add_argument("path", metavar="PATH", help="the suite file")
    parser.add_argument(
        "--check", metavar="NAME", help="only labels of this check (fault: the fault reviewer's)"
    )
    parser.add_argument(
        "--judge",
        metavar="SPEC",
        action="append",
        help="judge with this model instead of the suite's (repeat for a jury), to compare "
        "judges; it reviews fault labels too, as one model",
    )
    parser.add_argument(
        "--min-kappa",
        type=_kappa_bar,
        metavar="X",
        help="exit 1 when κ (the judges' or the fault reviewer's) is below X, from -1 to 1 "
        "(CI gate)",
    )
    parser.add_argument("--json", metavar="FILE", help="write the calibration as JSON")
    parser.add_argument(
        "--no-cache", action="store_true", help="ask the judges again (no response cache)"
    )


def _kappa_bar(value: str) -> float:
    """A `--min-kappa` value: a number from -1 to 1 (NaN would silently pass every κ)."""
    try:
        bar = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number from -1 to 1, got {value!r}") from None
    if not math.isfinite(bar) or not -1.0 <= bar <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number from -1 to 1, got {value!r}")
    return bar


def calibrate_command(args: argparse.Namespace) -> int:
    """Run `tui-eval calibrate` and return its exit code."""
    judges: list[str] | None = args.judge
    judge = None if not judges else judges[0] if len(judges) == 1 else list(judges)

    async def run() -> Calibration:
        return await calibrate(
            args.path, check=args.check, judge=judge, cache="off" if args.no_cache else "on"
        )

    try:
        calibration = anyio.run(run)
    except CalibrationError as exc:
        print(f"tui-eval: {sanitize(str(exc))}", file=sys.stderr)
        return exit_code_for(exc)
    if args.json:
        document = json.dumps(calibration.as_dict(), indent=2, default=value_text)
        atomic_write_bytes(Path(args.json), document.encode())
    lines = [render_calibration(calibration)]
    judge_errors = sum(error.record.check != FAULT_CHECK for error in calibration.errors)
    if judge_errors:
        lines.append(
            f"failing: the judge gave no verdict on {judge_errors} "
            f"labelled output{'s' * (judge_errors != 1)}"
        )
    review_errors = len(calibration.errors) - judge_errors
    if review_errors:
        lines.append(
            f"failing: the reviewer gave no verdict on {review_errors} "
            f"labelled conversation{'s' * (review_errors != 1)}"
        )
    if args.min_kappa is not None:
        for kappa in calibration.failing_kappas(args.min_kappa):
            lines.append(f"failing: {kappa} below --min-kappa {args.min_kappa:g}")
    print("\n".join(lines))
    # Written here, so a reader that left (`| head`) is met by the CLI's handling, not by
    # the interpreter's last flush.
    sys.stdout.flush()
    return EXIT_OK if calibration.passes(args.min_kappa) else EXIT_FAILED


def render_calibration(calibration: Calibration) -> str:
    """The terminal report: the summary, the disagreements, what was skipped or stopped."""
    lines = [calibration.summary()]
    if calibration.judge_requests:
        asked = "reviewer" if calibration.kind == "fault" else "judge"
        lines.append(
            f"  {asked} requests: {calibration.judge_requests} "
            f"({calibration.cached_requests} from the cache)"
        )
    if calibration.disagreements:
        lines.append(f"disagreements ({len(calibration.disagreements)}):")
        for item in calibration.disagreements[:SHOWN_DISAGREEMENTS]:
            human = "pass" if item.human_passed else "fail"
            judge = "pass" if item.judge.passed else "fail"
            score = f" ({item.judge.score_text})" if item.judge.score_text else ""
            lines.append(
                f"  {one_line(item.record.case, 50)} · {item.record.check}: human {human}, "
                f"judge {judge}{score} — {one_line(item.judge.reason, 100)}"
            )
        if len(calibration.disagreements) > SHOWN_DISAGREEMENTS:
            lines.append(f"  … and {len(calibration.disagreements) - SHOWN_DISAGREEMENTS} more")
    reviewer = calibration.reviewer
    if reviewer is not None and reviewer.reviewer_disagreements:
        disagreements = reviewer.reviewer_disagreements
        lines.append(f"reviewer disagreements ({len(disagreements)}):")
        for reviewed in disagreements[:SHOWN_DISAGREEMENTS]:
            fault = reviewed.fault
            turn = f" (turn {fault.turn})" if fault.turn is not None else ""
            lines.append(
                f"  {one_line(reviewed.record.case, 50)} · {FAULT_CHECK}: human "
                f"{reviewed.record.label}, reviewer {fault.party}{turn} — "
                f"{one_line(fault.reason, 100)}"
            )
        if len(disagreements) > SHOWN_DISAGREEMENTS:
            lines.append(f"  … and {len(disagreements) - SHOWN_DISAGREEMENTS} more")
    for error in calibration.errors[:SHOWN_DISAGREEMENTS]:
        asked = "reviewer" if error.record.check == FAULT_CHECK else "judge"
        lines.append(
            f"{asked} error: {one_line(error.record.case, 50)} · {error.record.check}: "
            f"{one_line(error.error, 160)}"
        )
    if len(calibration.errors) > SHOWN_DISAGREEMENTS:
        lines.append(f"  … and {len(calibration.errors) - SHOWN_DISAGREEMENTS} more errors")
    for reason in calibration.skipped:
        lines.append(f"skipped: {sanitize(reason)}")
    if calibration.stopped:
        lines.append(f"stopped: {calibration.stopped}")
    return "\n".join(lines)
