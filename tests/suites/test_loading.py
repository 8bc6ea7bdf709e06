from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tui_eval import evaluate
from tui_eval.suites import Suite, SuiteFileError, json_schema, load_suites
from tui_eval.suites.declarative import load_jsonl_suite, load_yaml_suite

pytestmark = pytest.mark.anyio

GOOD_PY = """
from tui_eval import Case, Suite, contains

async def echo(question: str) -> str:
    return question

suite = Suite("echo", agent=echo, cases=[Case("hello", checks=[contains("hello")])])
"""


def write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_python_suite_and_broken_files_do_not_stop_each_other(tmp_path):
    write(tmp_path / "good.py", GOOD_PY)
    write(tmp_path / "broken.py", "from tui_eval import Suite\nsuite = Suite(\n")
    write(tmp_path / "raises.py", "from tui_eval import Suite\nraise RuntimeError('no API key')\n")
    write(tmp_path / "helper.py", "def tool():\n    return 1\n")  # never imported: no Suite in it
    write(tmp_path / "empty.py", "# mentions Suite but defines none\n")
    loaded = load_suites([tmp_path])
    assert [s.name for s in loaded.suites] == ["echo"]
    assert loaded.suites[0].path == tmp_path / "good.py"
    messages = {e.path.name: e.message for e in loaded.errors}
    assert set(messages) == {"broken.py", "raises.py", "empty.py"}
    assert messages["broken.py"].startswith(f"{tmp_path / 'broken.py'}:2: syntax error")
    assert "RuntimeError: no API key" in messages["raises.py"]
    assert "no Suite defined" in messages["empty.py"]


def test_missing_path_and_wrong_suffix(tmp_path):
    write(tmp_path / "notes.txt", "hi")
    loaded = load_suites([tmp_path / "nope", tmp_path / "notes.txt"])
    assert [e.message.split(": ", 1)[1] for e in loaded.errors] == [
        "no such file or folder",
        "not a suite file (expected .py, .yaml, .yml, .jsonl)",
    ]


YAML = """
name: geo
model: openai-compatible:m@http://127.0.0.1:9/v1
judge_model: openai-compatible:judge@http://127.0.0.1:9/v1
cases:
  - name: capital
    input: What is the capital of France?
    checks:
      - contains: Paris
      - contains: {value: paris, ignore_case: true}
      - not_contains: Berlin
      - regex: 'Par\\w+'
      - equals: Paris
      - matches: {city: Paris}
      - tool_called: search
      - tool_called: {name: search, args: {q: France}}
      - tool_not_called: delete
      - tool_sequence: [search]
      - tool_sequence: {names: [search], strict_order: false}
      - max_turns: 3
      - max_tokens: 1000
      - max_latency: 2500
      - no_error: true
      - llm_judge: "Names the capital"
      - llm_judge: {rubric: "Polite", threshold: 0.9}
      - all_of: [{contains: P}, {contains: a}]
      - any_of: [{contains: P}, {contains: z}]
      - weighted: {checks: [{check: {contains: P}, weight: 2}, {check: {contains: z}}], threshold: 0.5}
    samples: 4
    pass_threshold: 0.75
    timeout: 30
    metadata: {topic: geography}
"""


def test_yaml_suite_with_every_check(tmp_path):
    suite = load_yaml_suite(write(tmp_path / "geo.yaml", YAML))
    case = suite.cases[0]
    assert suite.name == "geo" and case.name == "capital" and case.samples == 4
    assert (
        case.pass_threshold == 0.75
        and case.timeout == 30
        and case.metadata == {"topic": "geography"}
    )
    names = [getattr(c, "name", "") for c in case.checks]
    assert names == [
        "contains",
        "contains",
        "not_contains",
        "regex",
        "equals",
        "matches",
        "tool_called",
        "tool_called",
        "tool_not_called",
        "tool_sequence",
        "tool_sequence",
        "max_turns",
        "max_tokens",
        "max_latency",
        "no_error",
        "llm_judge[Names the capital]",  # two unnamed judges of one case: told apart
        "llm_judge[Polite]",
        "all_of",
        "any_of",
        "weighted",
    ]
    judge = case.checks[16]
    assert judge.threshold == 0.9 and judge.model == "openai-compatible:judge@http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "cases:\n  - input: a\n  - name: second\n    input: b\n    samples: many\n",
            "case 2 ('second'): field 'samples': Input should be a valid integer",
        ),
        (
            "cases:\n  - input: a\n    sampels: 3\n",
            "case 1: field 'sampels': Extra inputs are not permitted",
        ),
        (
            "cases:\n  - input: a\n    checks: [{contans: x}]\n",
            "case 1: field 'checks.0': unknown check 'contans'; known: all_of, any_of, at_turn, choice, contains",
        ),
        (
            "cases:\n  - input: a\n    checks: [{max_turns: lots}]\n",
            "case 1: field 'checks.0.max_turns': Input should be a valid integer",
        ),
        (
            "cases:\n  - input: a\n    checks: [{contains: x, regex: y}]\n",
            "case 1: field 'checks.0': a check is a mapping with one key naming a built-in check",
        ),
        ("cases: [\n", "invalid YAML"),
        (
            "concurrency: 0\ncases:\n  - input: a\n",
            "field 'concurrency': Input should be greater than or equal to 1",
        ),
        ("cases: []\n", "field 'cases': List should have at least 1 item"),
        ("cases:\n  - input: a\n", "no agent: set `agent: module:attribute`"),
        (
            "agent: nosuchmodule:make\ncases:\n  - input: a\n",
            "field 'agent': cannot import 'nosuchmodule'",
        ),
    ],
)
def test_yaml_errors_name_file_case_and_field(tmp_path, body, expected):
    path = write(
        tmp_path / "bad.yaml",
        "model: openai:gpt-4o-mini\n" + body
        if "agent:" not in body and "no agent" not in expected
        else body,
    )
    with pytest.raises(SuiteFileError) as info:
        load_yaml_suite(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert expected in message, message


def test_jsonl_suite_and_line_errors(tmp_path):
    rows = [
        {"suite": {"name": "big", "concurrency": 8}},
        {"input": "1+1", "script": [{"text": "2"}], "checks": [{"equals": "2"}]},
        {"input": "2+2", "name": "four", "script": [{"text": "4"}], "checks": [{"equals": "4"}]},
    ]
    path = write(tmp_path / "big.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    suite = load_jsonl_suite(path)
    assert (
        suite.name == "big"
        and suite.concurrency == 8
        and [c.name for c in suite.cases] == ["1+1", "four"]
    )
    bad = write(
        tmp_path / "bad.jsonl",
        json.dumps(rows[1]) + "\n" + json.dumps({"input": "x", "samples": "x"}) + "\n{oops\n",
    )
    with pytest.raises(
        SuiteFileError,
        match=r"bad\.jsonl: line 2: field 'samples': Input should be a valid integer",
    ):
        load_jsonl_suite(bad)


async def test_scripted_yaml_suite_runs_offline(tmp_path):
    write(
        tmp_path / "tools_mod.py",
        "from tui_eval import Agent\nfrom tui_eval.testing import ScriptedProvider\n"
        "def add(a: int, b: int) -> int:\n    return a + b\n"
        "def make():\n    return Agent(ScriptedProvider(), tools=[add])\n",
    )
    write(
        tmp_path / "s.yaml",
        """
        agent: tools_mod:make
        cases:
          - input: 2 + 3?
            samples: 2
            script: [{call: add, args: {a: 2, b: 3}}, {text: "5", input_tokens: 10, output_tokens: 1}]
            checks: [{tool_called: {name: add, args: {a: 2}}}, {equals: "5"}]
    """,
    )
    suite = load_yaml_suite(tmp_path / "s.yaml")
    report = await evaluate(suite.agent, suite.cases)
    assert report.passed and report.cases[0].samples[1].run.tool_calls[0].result == 5


def test_duplicate_case_names_are_a_load_error(tmp_path):
    write(tmp_path / "dup.yaml", "model: openai:x\ncases:\n  - input: same\n  - input: same\n")
    loaded = load_suites([tmp_path / "dup.yaml"])
    assert not loaded.suites and "duplicate case names ['same']" in loaded.errors[0].message


def test_skip_unless_env(tmp_path, monkeypatch):
    write(
        tmp_path / "live.yaml",
        "model: openai:gpt-4o-mini\nskip_unless_env: [OPENAI_API_KEY]\ncases:\n  - input: a\n",
    )
    suite = load_suites([tmp_path]).suites[0]
    assert suite.skip == "skipped: set OPENAI_API_KEY to run it"


def test_select_filters_and_overrides_samples():
    from tui_eval import Case

    suite = Suite("s", agent=None, cases=[Case("Alpha"), Case("beta"), Case("ALPHABET", samples=3)])
    chosen = suite.select(filter="alpha", samples=2)
    assert [c.name for c in chosen.cases] == ["Alpha", "ALPHABET"] and {
        c.samples for c in chosen.cases
    } == {2}
    assert len(suite.cases) == 3


def test_shipped_json_schema_is_current():
    shipped = Path(__file__).parents[2] / "tui_eval" / "suites" / "suite.schema.json"
    assert json.loads(shipped.read_text()) == json_schema(), (
        "regenerate with: python -m tui_eval.suites.declarative"
    )


async def test_yaml_suite_with_an_offline_judge_from_python(tmp_path):
    write(
        tmp_path / "judges.py",
        """
        from tui_eval.checks import verdict_reply
        from tui_eval.testing import ScriptedProvider, text

        def judge():
            return ScriptedProvider([text(verdict_reply(0.9, "Polite and specific."))])
    """,
    )
    write(
        tmp_path / "judged.yaml",
        """
        judge_model: python:judges:judge
        cases:
          - input: Reset my password
            script: [{text: "Here is a reset link."}]
            checks: [{llm_judge: "Polite, gives a next step"}]
    """,
    )
    suite = load_yaml_suite(tmp_path / "judged.yaml")
    report = await evaluate(suite.agent, suite.cases)
    assert report.passed
    assert report.cases[0].samples[0].checks[0].reason == "Polite and specific."


def test_python_spec_errors():
    from tui_eval.agents.providers import ModelSpecError, resolve_model

    with pytest.raises(ModelSpecError, match="python:MODULE:ATTRIBUTE"):
        resolve_model("python:nomodule")
    with pytest.raises(ModelSpecError, match="cannot import 'no_such_mod_xyz'"):
        resolve_model("python:no_such_mod_xyz:x")


@pytest.mark.parametrize(
    ("checks", "valid"),
    [
        ([{"contains": "Paris"}], True),
        ([{"contains": {"value": "paris", "ignore_case": True}}], True),
        ([{"tool_called": {"name": "add", "args": {"a": 2}}}], True),
        ([{"weighted": {"checks": [{"check": {"contains": "P"}, "weight": 2}]}}], True),
        ([{"all_of": [{"contains": "a"}, {"max_turns": 3}]}], True),
        ([{"equals": {"any": ["structure"]}}], True),
        ([{"contains": {"value": 1}}], False),  # wrong argument type
        ([{"contains": {"value": "x", "case": True}}], False),  # unknown argument
        ([{"max_turns": "lots"}], False),
        ([{"contans": "x"}], False),  # unknown check
        ([{"all_of": [{"contains": 5}]}], False),  # nested checks are checked too
        ([{"llm_judge": {"rubric": "r", "threshold": 2}}], False),
    ],
)
def test_the_shipped_schema_flags_wrong_check_arguments(checks, valid):
    import jsonschema

    shipped = Path(__file__).parents[2] / "tui_eval" / "suites" / "suite.schema.json"
    schema = json.loads(shipped.read_text())
    document = {"model": "openai:gpt-4o-mini", "cases": [{"input": "q", "checks": checks}]}
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(document))
    assert (not errors) == valid, [e.message for e in errors]
    # The loader agrees with the schema, from the same types.
    from tui_eval.suites.declarative import SuiteSpec

    try:
        SuiteSpec.model_validate(document)
        loaded = True
    except Exception:
        loaded = False
    assert loaded == valid


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "import sys\nfrom tui_eval import Suite\nsys.exit(3)\n",
            "called sys.exit(3) while importing",
        ),
        (
            "from tui_eval import Case, Suite\nsuite = Suite('s', cases=[Case('q')])\n",
            "suite 's': it has no agent",
        ),
        (
            "from tui_eval import Case, Suite\n"
            "suite = Suite('s', agent=print, cases=[Case('q'), 'not a case'])\n",
            "suite 's': cases[1] is a str, not a Case",
        ),
        (
            "from tui_eval import Case, Suite\n"
            "suite = Suite('s', agent=print, cases=[Case('q')], concurrency=0)\n",
            "suite 's': concurrency must be at least 1, got 0",
        ),
        (
            "from tui_eval import Suite\nsuite = Suite('s', agent=print, cases=[])\n",
            "suite 's': it has no cases",
        ),
    ],
)
def test_unrunnable_python_suites_are_load_errors_naming_the_file(tmp_path, body, expected):
    write(tmp_path / "good.py", GOOD_PY)
    bad = write(tmp_path / "bad_suite.py", body)
    loaded = load_suites([tmp_path])
    assert [s.name for s in loaded.suites] == ["echo"]  # the other suite still loads
    (error,) = loaded.errors
    assert error.message.startswith(str(bad)) and expected in error.message, error.message


def test_a_bad_regex_names_the_case_and_the_field(tmp_path):
    path = write(
        tmp_path / "re.yaml",
        "model: openai:gpt-4o-mini\ncases:\n  - name: pattern\n    input: a\n    checks: [{regex: '[unclosed'}]\n",
    )
    with pytest.raises(SuiteFileError) as info:
        load_yaml_suite(path)
    message = str(info.value)
    assert "case 1 ('pattern')" in message and "field 'checks[0]'" in message
    assert "regex" in message and "unterminated character set" in message


def test_symlink_loops_and_fifos_never_hang_discovery(tmp_path):
    import os

    write(tmp_path / "suites" / "good.py", GOOD_PY)
    (tmp_path / "suites" / "loop").symlink_to(tmp_path / "suites", target_is_directory=True)
    (tmp_path / "suites" / "nested").mkdir()
    (tmp_path / "suites" / "nested" / "back").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(tmp_path / "suites" / "pipe.yaml")
    (tmp_path / "suites" / "dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    loaded = load_suites([tmp_path / "suites"])
    assert [s.name for s in loaded.suites] == ["echo"] and not loaded.errors
    named = load_suites([tmp_path / "suites" / "pipe.yaml"])
    assert "not a regular file" in named.errors[0].message


def test_yaml_suites_load_with_the_c_loader_when_present():
    import yaml

    from tui_eval.util import yaml_files

    if hasattr(yaml, "CSafeLoader"):
        assert issubclass(yaml_files.SafeLoader, yaml.CSafeLoader)


async def test_same_named_helpers_in_two_folders_each_serve_their_own_suite(tmp_path):
    """`tui-eval run team_a/ team_b/`: each folder has its own `helpers.py`; a suite imports
    the one beside it, never the other folder's module cached under the same name."""
    for team in ("a", "b"):
        folder = tmp_path / f"team_{team}"
        folder.mkdir()
        write(folder / "helpers.py", f"async def agent(question):\n    return 'team {team}'\n")
        write(
            folder / f"py_{team}_suite.py",
            "from helpers import agent\nfrom tui_eval import Case, Suite\n"
            f"suite = Suite('py_{team}', agent=agent, cases=[Case('q')])\n",
        )
        write(
            folder / f"yaml_{team}.yaml",
            f"name: yaml_{team}\nagent: helpers:agent\ncases:\n  - name: q\n    input: q\n",
        )
    loaded = load_suites([tmp_path / "team_a", tmp_path / "team_b"])
    assert not loaded.errors
    answers = {}
    for suite in loaded.suites:
        report = await evaluate(suite.agent, suite.cases)
        answers[suite.name] = report.cases[0].samples[0].run.output
    assert answers == {
        "py_a": "team a",
        "yaml_a": "team a",
        "py_b": "team b",
        "yaml_b": "team b",
    }


CONVERSATION_YAML = """\
name: shop
model: openai:gpt-4o-mini
cases:
  - name: cancel
    input: Please cancel my order.
    user: [It is A-17.]
    state: {A-17: {status: paid}}
    script:
      - {text: Which order?}
      - {call: cancel_order, args: {order_id: A-17}}
      - {text: Done.}
    checks:
      - state_equals: {A-17: {status: cancelled}}
      - every_turn: {not_contains: As an AI}
      - at_turn: {turn: 2, check: {tool_called: cancel_order}}
  - name: simulated
    user: {instructions: You want A-17 cancelled., model: openai:gpt-4o-mini, max_turns: 4}
  - name: database
    input: hi
    state: shop.db
"""


async def test_a_yaml_conversation_with_a_user_a_state_and_conversation_checks(tmp_path):
    import sqlite3

    from tui_eval import Agent, ScriptedUser, SimulatedUser

    with sqlite3.connect(tmp_path / "shop.db") as db:
        db.execute("CREATE TABLE t (x)")
    suite = load_yaml_suite(write(tmp_path / "shop.yaml", CONVERSATION_YAML))
    cancel, simulated, database = suite.cases
    assert isinstance(cancel.user, ScriptedUser) and cancel.state == {"A-17": {"status": "paid"}}
    assert isinstance(simulated.user, SimulatedUser) and simulated.user.max_turns == 4
    assert simulated.input is None and database.state == (tmp_path / "shop.db").resolve()

    def cancel_order(order_id: str, state: dict) -> str:
        """Cancel an order."""
        state[order_id]["status"] = "cancelled"
        return "ok"

    report = await evaluate(Agent("openai:gpt-4o-mini", tools=[cancel_order]), [cancel])
    sample = report.cases[0].samples[0]
    assert sample.status == "passed", sample.first_failure
    assert len(sample.run.conversation.turns) == 2


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("cases:\n  - name: x\n", "a case needs an `input` (or a `user`"),
        ("cases:\n  - input: a\n    user: {lines: [b], instructions: c}\n", "either `lines`"),
        ("model: openai:m\ncases:\n  - input: a\n    state: notes.txt\n", "is not an SQLite file"),
        (
            "model: openai:m\ncases:\n  - input: a\n    state: gone.db\n",
            "no database 'gone.db' beside",
        ),
    ],
)
def test_yaml_conversation_errors_name_the_case_and_field(tmp_path, body, expected):
    with pytest.raises(SuiteFileError, match="case 1") as error:
        load_yaml_suite(write(tmp_path / "bad.yaml", body))
    assert expected in str(error.value)
