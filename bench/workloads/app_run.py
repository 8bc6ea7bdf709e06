"""Workload A streamed through the app (headless Textual, Pilot), or headless: `python app_run.py app|headless`."""

from __future__ import annotations

import sys
import time

import anyio

from tui_eval import Case, Suite, contains, evaluate

MODE = sys.argv[1]


async def agent(question: str) -> str:
    return question.replace("question", "answer")


async def main() -> None:
    cases = [
        Case(f"question {i}", checks=[contains(f"answer {i}")], samples=5) for i in range(2000)
    ]
    await evaluate(agent, cases[:10])  # warm both paths the same way
    if MODE == "headless":
        start = time.perf_counter()
        report = await evaluate(agent, cases, concurrency=50)
        wall = time.perf_counter() - start
    else:
        from tui_eval.tui.app import make_app
        from tui_eval.tui.screens.run import RunScreen

        suite = Suite("A", agent=agent, cases=cases, concurrency=50)
        app = make_app(suites=[suite])
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            session = app.workspace.new_session(suite)
            await app.push_screen(RunScreen(session, app.workspace))
            await pilot.pause()
            if "--freeze" in sys.argv:
                import gc

                gc.freeze()
            start = time.perf_counter()
            worker = app.run_worker(session.run())
            await worker.wait()
            wall = time.perf_counter() - start
            report = session.report
    assert report is not None and len(report.samples) == 10_000
    print(f"{MODE} {wall:.4f}")


anyio.run(main)
