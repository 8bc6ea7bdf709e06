"""Tools and the agent factory that the geography YAML example refers to."""

from __future__ import annotations

from tui_eval import Agent
from tui_eval.testing import ScriptedProvider, verdict

POPULATIONS = {"Tokyo": 14_000_000, "Paris": 2_100_000, "Oslo": 700_000}


def lookup_population(city: str) -> int:
    """The population of a city."""
    if city not in POPULATIONS:
        raise KeyError(f"no population data for {city}")
    return POPULATIONS[city]


def make_agent() -> Agent:
    """The geography agent; each case of the YAML file scripts its model."""
    return Agent(
        ScriptedProvider(name="unused"), tools=[lookup_population], instructions="Answer briefly."
    )


def make_judge() -> ScriptedProvider:
    """The offline judge `judge_model: python:geo_tools:make_judge` names: a fresh scripted
    provider per check, replying with the `Verdict` JSON an llm_judge expects."""
    return ScriptedProvider(
        [verdict(0.85, "One sentence, names Oslo as the capital, and adds a true detail.")]
    )
