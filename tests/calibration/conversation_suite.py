"""A conversation suite for fault labels: scripted users, a plain-function agent, and a
scripted fault reviewer that blames whom the case's input names (`blame=<party>`).

Eight conversations fail for the reviewer to decide (3 user, 3 agent, 2 environment), two
fail by a rule (the user stops while the agent asks a question: the user's fault, decided
without the reviewer) and one passes. The reviewer and the agent count their calls in the
files `$REVIEWS` and `$AGENT_CALLS` name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tui_eval.suites import Suite, load_suites

SUITE = """\
import json
import os
import re

from tui_eval import Case, ScriptedUser, Suite, contains, llm_judge
from tui_eval.agents.messages import Completion
from tui_eval.agents.providers.scripted import ScriptedProvider
from tui_eval.checks.judge import verdict_reply

JUDGED = False


def review(messages):
    with open(os.environ["REVIEWS"], "a") as log:
        log.write("reviewed\\n")
    party = re.search(r"blame=(\\w+)", messages[-1].content).group(1)
    reply = {"fault": party, "turn": 1, "reason": f"the transcript says {party}"}
    return Completion(content=json.dumps(reply))


def reviewer():
    return ScriptedProvider([review], name="scripted-reviewer")


def verdict(messages):
    answer = messages[-1].content.split("<answer>")[-1]
    score = 0.9 if "Noted" in answer or "done" in answer else 0.3
    return Completion(content=verdict_reply(score, "judged by rule"))


def judge():
    return ScriptedProvider([verdict], name="rule-judge")


def agent(messages):
    with open(os.environ["AGENT_CALLS"], "a") as calls:
        calls.write("called\\n")
    said = " ".join(m.content or "" for m in messages if m.role == "user")
    if "ask" in said:
        return "Is there anything else?"
    return "All done." if "finish" in said else f"Noted: {messages[-1].content}"


def conversation(name, opening):
    return Case(
        opening,
        name=name,
        user=ScriptedUser(["Thanks."], reviewer=reviewer),
        checks=[contains("done"), *([llm_judge("Good?", model=judge)] if JUDGED else [])],
    )


BLAMED = ["user", "user", "user", "agent", "agent", "agent", "environment", "environment"]
suite = Suite(
    "shop",
    agent=agent,
    cases=[
        *[conversation(f"conv {i}", f"order {i} (blame={party})") for i, party in enumerate(BLAMED)],
        conversation("rule 0", "please ask me"),
        conversation("rule 1", "ask again"),
        conversation("fine", "finish it"),
    ],
)
"""

REVIEWED = ["user", "user", "user", "agent", "agent", "agent", "environment", "environment"]
"""What the reviewer says of `conv 0` … `conv 7`."""

HUMAN = ["user", "user", "agent", "agent", "agent", "user", "environment", "agent"]
"""What the tests' human says of them: three disagreements."""


REVIEWERS = """\
from tui_eval.agents.messages import Completion
from tui_eval.agents.providers.scripted import ScriptedProvider


def always_agent():
    reply = '{"fault": "agent", "turn": 1, "reason": "the agent, always"}'
    return ScriptedProvider([lambda messages: Completion(content=reply)], name="always-agent")


def garbage():
    return ScriptedProvider([lambda messages: Completion(content="no idea")], name="garbage")
"""
"""Other reviewers, beside the suite (`python:reviewers:always_agent`)."""


def write_suite(folder: Path, monkeypatch: Any, *, judged: bool = False) -> Path:
    """The suite file in `folder/suites/shop.py` (with an `llm_judge` on every case when
    `judged`), the other reviewers beside it, and the call logs in `folder`."""
    monkeypatch.setenv("REVIEWS", str(folder / "reviews.txt"))
    monkeypatch.setenv("AGENT_CALLS", str(folder / "agent_calls.txt"))
    monkeypatch.delenv("TUI_EVAL_JUDGE_MODEL", raising=False)
    path = folder / "suites" / "shop.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SUITE.replace("JUDGED = False", f"JUDGED = {judged}"))
    (path.parent / "reviewers.py").write_text(REVIEWERS)
    return path


def load_suite(path: Path) -> Suite:
    """The suite in `path`."""
    loaded = load_suites([path])
    assert not loaded.errors, loaded.errors
    return loaded.suites[0]


def calls(folder: Path, log: str) -> int:
    """How many calls a log in `folder` counts (`reviews.txt`, `agent_calls.txt`)."""
    path = folder / log
    return len(path.read_text().splitlines()) if path.exists() else 0
