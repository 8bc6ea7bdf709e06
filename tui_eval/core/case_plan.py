"""`CasePlan`: what the runner works out once per case — the agent call's spec and how to run
its checks (synchronous ones inline, asynchronous ones concurrently, each exactly once)."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

import anyio

from tui_eval.agents.messages import RunResult
from tui_eval.agents.run_spec import RunSpec
from tui_eval.checks.base import (
    Check,
    CheckResult,
    call_check,
    is_async_check,
    run_check,
    settle_check,
)
from tui_eval.checks.expected import case_expected
from tui_eval.core.cases import Case


@dataclass(slots=True)
class CasePlan:
    """One case, ready to run many times."""

    case: Case
    spec: RunSpec
    sync_checks: list[tuple[int, Check]]
    async_checks: list[tuple[int, Check]]

    @classmethod
    def of(cls, case: Case) -> CasePlan:
        """Plan `case`: its run spec, and its checks sorted by whether they are async."""
        spec = RunSpec(case.input, case.context, case.max_turns, case.output_type, case.model)
        sync_checks = [(i, c) for i, c in enumerate(case.checks) if not is_async_check(c)]
        async_checks = [(i, c) for i, c in enumerate(case.checks) if is_async_check(c)]
        return cls(case, spec, sync_checks, async_checks)

    def run_checks(self, run: RunResult) -> Awaitable[list[CheckResult]]:
        """Every check of the case, each called exactly once; async ones run concurrently.

        Checks that compare with the case's `expected` value read it from here (a case
        without one leaves the context alone: those checks then say it is missing). A
        plain function returning the awaitable: one coroutine frame less per sample."""
        if self.case.expected is None:
            return self._run_checks(run)
        return self._run_checks_expecting(run)

    async def _run_checks_expecting(self, run: RunResult) -> list[CheckResult]:
        with case_expected(self.case.expected):
            return await self._run_checks(run)

    async def _run_checks(self, run: RunResult) -> list[CheckResult]:
        called: dict[int, CheckResult | Awaitable[Any]] = {}
        if not self.async_checks:
            # The common case: free matchers, answered inline with no task group.
            answered: list[CheckResult] = []
            for position, check in self.sync_checks:
                outcome = call_check(check, run)
                if not isinstance(outcome, CheckResult):
                    # It returned an awaitable after all: finish the rest on the general path.
                    called = dict(enumerate(answered))
                    called[position] = outcome
                    break
                answered.append(outcome)
            else:
                return answered
        for position, check in self.sync_checks:
            if position not in called:
                called[position] = call_check(check, run)
        results: list[CheckResult | None] = [None] * len(self.case.checks)
        waiting: list[tuple[int, Check, Awaitable[Any] | None]] = []
        for position, outcome in called.items():
            if isinstance(outcome, CheckResult):
                results[position] = outcome
            else:
                waiting.append((position, self.case.checks[position], outcome))
        waiting += [(position, check, None) for position, check in self.async_checks]

        async def finish(position: int, check: Check, pending: Awaitable[Any] | None) -> None:
            results[position] = await (
                run_check(check, run) if pending is None else settle_check(check, pending)
            )

        if len(waiting) == 1:
            await finish(*waiting[0])
        elif waiting:
            async with anyio.create_task_group() as group:
                for item in waiting:
                    group.start_soon(finish, *item)
        return [r for r in results if r is not None]
