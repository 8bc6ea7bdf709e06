"""Every executor through the same scenarios: verdicts, counts, streaming order, cancel,
resume. The Ray ones (and its fault and secrets tests) are marked `ray`: `.ci/run` runs
them on one local 2-CPU runtime with `python -m pytest -m ray -n 0`."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import threading
from collections import Counter
from pathlib import Path

import anyio
import pytest

from tui_eval.agents.http.context import Runtime
from tui_eval.core.settings import RunSettings
from tui_eval.run import ray_executor
from tui_eval.run.evaluation import Evaluation
from tui_eval.run.events import SampleFinished
from tui_eval.suites import Suite, load_suites

SUITE = """
import os
import anyio
from tui_eval import Case, Suite, contains

CALLS = {calls!r}
GATE = {gate!r}

async def agent(prompt: str) -> str:
    with open(CALLS, "a") as log:
        log.write(prompt + "\\n")
    if prompt == "q0" and GATE:
        with anyio.fail_after(120):  # only a stuck test's guard
            while not os.path.exists(GATE):
                await anyio.sleep(0.01)
    await anyio.sleep({first_latency} if prompt == "q0" else {latency})
    if prompt == "q-env":
        return os.environ.get("TOP_SECRET_KEY", "unset")
    return prompt.upper() if int(prompt[1:]) % 3 else "wrong"

suite = Suite(
    "contract",
    agent=agent,
    cases=[
        Case(f"q{{i}}", checks=[contains(f"Q{{i}}")], name=f"c{{i}}", samples={samples})
        for i in range({cases})
    ],
    concurrency={concurrency},
)
"""


def write_suite(
    folder: Path,
    *,
    cases: int = 12,
    samples: int = 3,
    latency: float = 0.005,
    concurrency: int = 8,
    first_latency: float = 0.3,
    gate: Path | None = None,
) -> Suite:
    """A suite whose agent answers after `latency` s, and case c0's (q0) after `first_latency` s
    (and, given a `gate`, not before that file exists)."""
    calls = folder / "calls.log"
    path = folder / "contract_suite.py"
    path.write_text(
        textwrap.dedent(
            SUITE.format(
                calls=str(calls),
                latency=latency,
                first_latency=first_latency,
                samples=samples,
                cases=cases,
                concurrency=concurrency,
                gate=str(gate) if gate is not None else "",
            )
        )
    )
    sys.modules.pop("contract_suite", None)
    return load_suites([str(path)]).suites[0]


def executor_for(kind: str, suite: Suite, **options: object) -> object:
    if kind == "in-process":
        return None
    from tui_eval.run.ray_executor import RayExecutor

    return RayExecutor(suite.path, suite.name, workers=2, **options)  # type: ignore[arg-type]


EXECUTORS = ["in-process", pytest.param("ray", marks=pytest.mark.ray)]


@pytest.fixture
def runtime(request):
    if "ray" in request.node.keywords:
        request.getfixturevalue("ray_runtime")


def run(evaluation: Evaluation):
    return anyio.run(evaluation.run)


def verdicts(report):
    return [(c.name, c.samples_passed, len(c.samples), c.passed) for c in report.cases]


@pytest.mark.parametrize("kind", EXECUTORS)
def test_same_verdicts_and_counts_as_in_process(kind, tmp_path, runtime):
    # No slow case: nothing here is about order, and c0's three samples one after the
    # other at 0.3 s were 1.8 s of waiting over the two runs.
    suite = write_suite(tmp_path, first_latency=0.005)
    expected = run(Evaluation(suite.agent, suite.cases, name=suite.name))
    report = run(
        Evaluation(
            suite.agent,
            suite.cases,
            settings=RunSettings(executor=executor_for(kind, suite)),
            name=suite.name,
        )
    )
    assert verdicts(report) == verdicts(expected)
    assert len(report.samples) == 36 and not report.cancelled
    assert sorted(s.index for s in report.cases[1].samples) == [0, 1, 2]


@pytest.mark.parametrize("kind", EXECUTORS)
def test_samples_stream_in_completion_order(kind, tmp_path, runtime):
    # c0's agent waits until the driver has every other case's samples: what arrives last
    # is decided by events, not by c0 being slower on a machine that may be busy.
    gate = tmp_path / "others-arrived"
    suite = write_suite(tmp_path, cases=8, samples=2, gate=gate)
    order: list[str] = []

    def on_event(event):
        if isinstance(event, SampleFinished):
            order.append(event.sample.case_name)
            if sum(name != "c0" for name in order) == 14:
                gate.touch()

    evaluation = Evaluation(
        suite.agent,
        suite.cases,
        settings=RunSettings(
            concurrency=8, parallel_samples=kind == "in-process", executor=executor_for(kind, suite)
        ),
        name=suite.name,
        on_event=on_event,
    )
    run(evaluation)
    assert len(order) == 16
    # The others streamed in as they finished, before c0's samples did.
    assert order[-2:] == ["c0", "c0"]


@pytest.mark.parametrize("kind", EXECUTORS)
def test_cancel_keeps_finished_samples(kind, tmp_path, runtime):
    suite = write_suite(tmp_path, cases=40, samples=5, latency=0.02, concurrency=4)
    seen = []

    def on_event(event):
        if isinstance(event, SampleFinished):
            seen.append(event.sample)
            if len(seen) == 20:
                evaluation.cancel()

    evaluation = Evaluation(
        suite.agent,
        suite.cases,
        settings=RunSettings(concurrency=4, executor=executor_for(kind, suite)),
        name=suite.name,
        on_event=on_event,
    )
    report = run(evaluation)
    assert report.cancelled
    assert 20 <= len(report.samples) < 200
    keys = [(s.case_name, s.index) for s in report.samples]
    assert len(keys) == len(set(keys))
    if kind == "ray":  # a cancelled run's workers may still be busy: they are stopped
        assert not evaluation.samples.context.runtime.idle_workers


@pytest.mark.parametrize("kind", EXECUTORS)
def test_resume_runs_only_the_missing_samples(kind, tmp_path, runtime):
    suite = write_suite(tmp_path, cases=6, samples=4, first_latency=0.005)
    first = run(Evaluation(suite.agent, suite.cases, name=suite.name))
    done = {c.name: c.samples[:2] for c in first.cases}
    calls = tmp_path / "calls.log"
    calls.write_text("")
    report = run(
        Evaluation(
            suite.agent,
            suite.cases,
            settings=RunSettings(executor=executor_for(kind, suite)),
            name=suite.name,
            done=done,
        )
    )
    assert len(calls.read_text().splitlines()) == 6 * 2
    assert all([s.index for s in c.samples] == [0, 1, 2, 3] for c in report.cases)
    assert verdicts(report) == verdicts(first)


@pytest.mark.ray
def test_a_killed_worker_loses_and_duplicates_nothing(tmp_path, ray_runtime):
    ray = ray_runtime
    suite = write_suite(tmp_path, cases=100, samples=5, latency=0.02, concurrency=40)
    executor = executor_for("ray", suite)
    killed = threading.Event()
    finished = []

    def kill_one_worker() -> None:
        pid = ray.get(executor.actors[0].pid.remote())
        os.kill(pid, signal.SIGKILL)
        killed.set()

    def on_event(event):
        if isinstance(event, SampleFinished):
            finished.append((event.sample.case_name, event.sample.index))
            if len(finished) == 100:
                threading.Thread(target=kill_one_worker, daemon=True).start()

    report = run(
        Evaluation(
            suite.agent,
            suite.cases,
            settings=RunSettings(concurrency=40, executor=executor),
            name=suite.name,
            on_event=on_event,
        )
    )
    assert killed.is_set() and executor.restarts >= 1
    keys = [(s.case_name, s.index) for s in report.samples]
    assert len(keys) == 500 and len(set(keys)) == 500  # 0 lost, 0 duplicated
    assert Counter(finished) == Counter(keys)  # and each announced once
    assert not report.cancelled


@pytest.mark.ray
def test_workers_see_only_the_allowed_environment(tmp_path, ray_runtime):
    path = tmp_path / "env_suite.py"
    path.write_text(
        (tmp_path / "contract_suite.py").read_text()
        if (tmp_path / "contract_suite.py").exists()
        else write_suite(tmp_path).path.read_text()  # type: ignore[union-attr]
    )
    path.write_text(path.read_text().replace('Case(f"q{i}"', 'Case("q-env"'))
    suite = load_suites([str(path)]).suites[0]
    suite.cases = suite.cases[:1]
    report = run(
        Evaluation(
            suite.agent,
            suite.cases,
            settings=RunSettings(executor=executor_for("ray", suite)),
            name=suite.name,
        )
    )
    # The agent answers with TOP_SECRET_KEY as its process sees it.
    assert report.samples[0].run.output == "unset"
    local = run(Evaluation(suite.agent, suite.cases, name=suite.name))
    assert local.samples[0].run.output == "***"  # the driver has it (and redacts it)


@pytest.mark.ray
def test_a_runtimes_next_run_reuses_its_workers_and_loads_the_edited_suite(
    tmp_path, ray_runtime, monkeypatch
):
    ray, shared = ray_runtime, Runtime()  # the app's, the CLI's: one for all their runs
    suite = write_suite(tmp_path, cases=6, samples=2)

    def idle_pids() -> set[int]:
        return {ray.get(a.pid.remote()) for idle in shared.idle_workers.values() for a in idle}

    first = run(
        Evaluation(
            suite.agent,
            suite.cases,
            settings=RunSettings(executor=executor_for("ray", suite), runtime=shared),
            name=suite.name,
        )
    )
    assert first.cases[0].samples_passed == 0  # "wrong" for q0
    workers = idle_pids()
    assert len(workers) == 2
    # The user fixes the agent; the next run takes the same two processes, which load
    # the suite file again.
    suite.path.write_text(suite.path.read_text().replace('else "wrong"', "else prompt.upper()"))
    edited = load_suites([str(suite.path)]).suites[0]
    second = run(
        Evaluation(
            edited.agent,
            edited.cases,
            settings=RunSettings(executor=executor_for("ray", edited), runtime=shared),
            name=edited.name,
        )
    )
    assert second.passed and idle_pids() == workers
    # Another allowed environment gets its own workers: none of these is reused.
    monkeypatch.setenv("TUI_EVAL_REUSE_TEST", "1")
    run(
        Evaluation(
            edited.agent,
            edited.cases,
            settings=RunSettings(executor=executor_for("ray", edited), runtime=shared),
            name=edited.name,
        )
    )
    assert len(idle_pids()) == 4 and workers <= idle_pids()
    assert ray_executor.release_workers(shared) == 4 and not shared.idle_workers


@pytest.fixture
def without_ray(monkeypatch):
    """`import ray` fails, as without the extra."""
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)


def test_without_ray_the_error_says_how_to_install(without_ray):
    from tui_eval.core.settings import ExecutorError
    from tui_eval.run.ray_executor import import_ray

    with pytest.raises(ExecutorError, match=r"pip install 'tui-eval\[ray\]'"):
        import_ray()


# Importing tui_eval (and its Ray executor) never imports Ray: tests/test_layering.py.


@pytest.mark.ray
def test_the_limiter_is_shared_by_every_worker(tmp_path, ray_runtime):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from loopback_api import LoopbackAPI

    with LoopbackAPI(rate=10, burst=2, latency=0.01) as api:
        path = tmp_path / "limited.yaml"
        cases = "\n".join(
            f"  - {{name: q{i}, input: question {i}, checks: [{{equals: answer {i}}}]}}"
            for i in range(40)
        )
        path.write_text(
            f"name: limited\nmodel: openai-compatible:m@{api.url}\nconcurrency: 8\ncases:\n{cases}\n"
        )
        suite = load_suites([str(path)]).suites[0]
        evaluation = Evaluation(
            suite.agent,
            suite.cases,
            settings=RunSettings(concurrency=8, executor=executor_for("ray", suite)),
            name=suite.name,
        )
        report = run(evaluation)
        stats = api.stats.as_dict()
    assert report.passed, report.header()
    rate = (stats["ok"] - 1) / stats["accepting_s"]
    # The 10 req/s limit held: never more than 10% over it. (How close a run comes to it
    # depends on how busy the machine is: on a loaded one the workers send slower.)
    assert rate <= 11.0, stats
    # One limiter for both workers: only requests sent before any response said the
    # limit are rejected; two limiters would each pace at 10 req/s and collide all run.
    assert stats["limited"] <= 16, stats


@pytest.mark.ray
def test_a_driver_stopped_mid_run_resumes_from_its_journal(tmp_path, ray_runtime):
    import subprocess

    from tests.test_hardening_cli import calls, slow_suites, wait_for_calls

    folder = slow_suites(tmp_path / "suites", count=12)
    env = {
        **os.environ,
        "AGENT_DELAY": "0.2",
        "RAY_ADDRESS": ray_runtime.get_runtime_context().gcs_address,
    }
    command = [sys.executable, "-m", "tui_eval"]
    driver = subprocess.Popen(
        [*command, "run", "suites", "--headless", "--executor", "ray"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_calls(folder, 4, driver, timeout=60)
    driver.send_signal(signal.SIGTERM)
    _out, err = driver.communicate(timeout=60)
    assert len(calls(folder)) < 24, err
    resumed = subprocess.run(
        [*command, "resume"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    # Every sample ran; samples in flight (or finished but unsent) at the stop ran again.
    assert set(calls(folder)) == {f"a{i}" for i in range(12)} | {f"b{i}" for i in range(12)}
    # The reports hold each sample exactly once.
    from tui_eval.report.report import Report

    reports = sorted(Path(os.environ["TUI_EVAL_HOME"]).glob("projects/*/runs/*/report.json"))
    names = [s.case_name for path in reports for s in Report.load(path).samples]
    assert sorted(names) == sorted([f"a{i}" for i in range(12)] + [f"b{i}" for i in range(12)])


def test_executor_ray_without_ray_is_a_clear_usage_error(tmp_path, without_ray, capsys):
    from tui_eval.cli import commands as cli

    suites = slow_suites_for_usage(tmp_path)
    code = cli.main(["run", str(suites), "--headless", "--executor", "ray"])
    assert code == 2
    assert "pip install 'tui-eval[ray]'" in capsys.readouterr().err


def slow_suites_for_usage(tmp_path: Path) -> Path:
    from tests.test_hardening_cli import slow_suites

    return slow_suites(tmp_path / "suites", count=1)


def test_any_output_travels_from_a_worker():
    from tui_eval.agents.messages import RunResult
    from tui_eval.core.results import SampleResult
    from tui_eval.run.ray_worker import decode, encode

    class Opaque:
        def __str__(self) -> str:
            return "opaque value"

    sample = SampleResult("c", 3, "passed", run=RunResult(output=Opaque()))
    ((label, back),) = decode(encode([("c", sample)]))
    assert label == "c" and back.index == 3 and back.run.output == "opaque value"


def test_a_batch_round_trips_every_field_of_a_sample():
    """Batches leave out fields at their defaults; what arrives equals what was sent."""
    from tui_eval import Agent, Case, contains, evaluate
    from tui_eval.agents.providers.scripted import ScriptedProvider, call, text
    from tui_eval.run.ray_worker import decode, encode

    def lookup(city: str) -> str:
        """Country of a city."""
        return "France"

    agent = Agent(
        ScriptedProvider([call("lookup", {"city": "Paris"}), text("France")]), tools=[lookup]
    )
    report = anyio.run(evaluate, agent, [Case("Where is Paris?", checks=[contains("France")])])
    sample = report.samples[0]
    sample.cost, sample.cached, sample.error = 0.25, True, "note"
    assert sample.run is not None and sample.run.tool_calls and sample.usage.requests
    ((label, back),) = decode(encode([("case", sample)]))
    assert label == "case" and back == sample


def test_a_workers_shared_limiter_takes_a_later_runs_caps():
    """A worker's runtime hands out a quota's shared limiter again with `rpm` set (a
    second request, a second run): the cap reaches the cluster's limiter, no AttributeError."""
    from tui_eval.agents.http.context import Runtime
    from tui_eval.run.ray_worker import SharedLimiter

    class Method:
        def __init__(self) -> None:
            self.calls: list[tuple[object, ...]] = []

        def remote(self, *args: object) -> None:
            self.calls.append(args)

    class Actor:
        set_caps = Method()

    actor = Actor()
    runtime = Runtime(lambda url, key, rpm, tpm: SharedLimiter(actor, url))
    first = runtime.limiter("http://api", "k", rpm=120)
    again = runtime.limiter("http://api", "k", rpm=60)
    assert again is first and actor.set_caps.calls == [(60, None)]
    assert first.local.request_cap == 1.0
