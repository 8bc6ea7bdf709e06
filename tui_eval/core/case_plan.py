"""`CasePlan`: what the runner works out once per case: the agent call and how to run its checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio

from tui_eval.agents.messages import RunResult
from tui_eval.agents.run_spec import RunSpec
from tui_eval.checks.base import (
    Check,
    CheckContext,
    CheckResult,
    call_check,
    is_async_check,
    settle_check,
    takes_context,
)
from tui_eval.core.cases import Case


@dataclass(slots=True)
class CasePlan:
    """One case, ready to run many times.

    Attributes:
        spec: what each sample asks of the agent.
        sync_checks: (position, check, takes a `CheckContext`) of the checks that answer at once.
        async_checks: the same, of the checks to await.
        takes_context: whether any check takes a `CheckContext` (else the runner makes none).
    """

    case: Case
    spec: RunSpec
    sync_checks: list[tuple[int, Check, bool]]
    async_checks: list[tuple[int, Check, bool]]
    takes_context: bool

    @classmethod
    def of(cls, case: Case) -> CasePlan:
        """Plan `case` (sorting its checks once, not per sample)."""
        spec = RunSpec(case.input, case.context, case.max_turns, case.output_type, case.model)
        planned = [(i, c, takes_context(c)) for i, c in enumerate(case.checks)]
        sync_checks = [item for item in planned if not is_async_check(item[1])]
        async_checks = [item for item in planned if is_async_check(item[1])]
        return cls(case, spec, sync_checks, async_checks, any(item[2] for item in planned))

    def check_context(self, sample_index: int) -> CheckContext:
        """What the checks of sample `sample_index` of this case know besides its run."""
        case = self.case
        return CheckContext(case.label, case.input, case.expected, case.metadata, sample_index)

    async def run_checks(
        self, run: RunResult, context: CheckContext | None = None
    ) -> list[CheckResult]:
        """Every check, each called exactly once: synchronous ones inline, in order, then
        whatever is left to await concurrently."""
        results: list[Any] = [None] * len(self.case.checks)
        for position, check, with_context in self.sync_checks:
            results[position] = call_check(check, run, context, with_context=with_context)
        waiting = [
            item
            for item in (*self.sync_checks, *self.async_checks)
            if not isinstance(results[item[0]], CheckResult)
        ]

        async def finish(position: int, check: Check, with_context: bool) -> None:
            outcome = results[position]
            if outcome is None:
                outcome = call_check(check, run, context, with_context=with_context)
            if not isinstance(outcome, CheckResult):
                outcome = await settle_check(check, outcome)
            results[position] = outcome

        if len(waiting) == 1:
            await finish(*waiting[0])
        elif waiting:
            async with anyio.create_task_group() as group:
                for item in waiting:
                    group.start_soon(finish, *item)
        return results
