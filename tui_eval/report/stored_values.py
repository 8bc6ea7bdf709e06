"""A sample as stored: values JSON cannot hold made safe, a long text output written once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tui_eval.agents.messages import ToolCall
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.util.text import json_safe

OUTPUT_ONCE_FROM = 1024
"""A text output at least this long is stored once, not again as the last message."""
OUTPUT_REF = "\x00tui-eval:output\x00"
"""Stored as the content of a final assistant message that repeats the output."""


def output_twice(sample: SampleResult) -> bool:
    """Whether `sample`'s long text output is repeated as its last message's content."""
    run = sample.run
    if run is None or not isinstance(run.output, str) or len(run.output) < OUTPUT_ONCE_FROM:
        return False
    messages = run.messages
    return (
        bool(messages) and messages[-1].role == "assistant" and messages[-1].content == run.output
    )


def output_once(sample: SampleResult) -> SampleResult:
    """`sample` as stored: a long text output is not written again as the last message."""
    if not output_twice(sample):
        return sample
    assert sample.run is not None
    last = sample.run.messages[-1]
    slim = replace(last, content=OUTPUT_REF)
    return replace(sample, run=replace(sample.run, messages=[*sample.run.messages[:-1], slim]))


def restore_output(sample: SampleResult) -> None:
    """Put the output back as the last message's content, where `output_once` left a reference."""
    run = sample.run
    if run is not None and run.messages and run.messages[-1].content == OUTPUT_REF:
        run.messages[-1].content = run.output if isinstance(run.output, str) else None


def map_values(sample: SampleResult, convert: Callable[[Any], Any]) -> SampleResult:
    """A copy of `sample` with `convert` applied to every value that came from outside."""
    run = sample.run
    if run is not None:
        calls = {id(call): _map_call(call, convert) for call in run.tool_calls}
        run = replace(
            run,
            output=convert(run.output),
            messages=[
                replace(
                    message,
                    content=convert(message.content),
                    tool_calls=[
                        calls.get(id(c)) or _map_call(c, convert) for c in message.tool_calls
                    ],
                )
                for message in run.messages
            ],
            tool_calls=list(calls.values()),
        )
    return replace(
        sample,
        case_name=convert(sample.case_name),
        run=run,
        checks=[replace(c, name=convert(c.name), reason=convert(c.reason)) for c in sample.checks],
        error=convert(sample.error),
        traceback=convert(sample.traceback),
    )


def _map_call(call: ToolCall, convert: Callable[[Any], Any]) -> ToolCall:
    return replace(
        call,
        arguments=convert(call.arguments),
        result=convert(call.result),
        error=convert(call.error),
    )


def storable_sample(sample: SampleResult) -> SampleResult:
    """A copy of `sample` whose every value JSON can hold (see `text.json_safe`)."""
    return map_values(sample, json_safe)


def storable_case(case: CaseResult) -> CaseResult:
    """A copy of `case` whose every value JSON can hold."""
    return replace(
        case,
        name=json_safe(case.name),
        samples=[storable_sample(s) for s in case.samples],
        input=json_safe(case.input),
        expected=json_safe(case.expected),
        expected_tools=json_safe(case.expected_tools),
        metadata=json_safe(case.metadata),
    )
