"""Tools from plain Python functions: JSON schema from the signature, validated calls."""

from __future__ import annotations

import inspect
import time
import typing
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
import pydantic

from tui_eval.agents.messages import Message, ToolCall
from tui_eval.agents.providers.base import ToolDef
from tui_eval.util.text import validation_message, value_text


@dataclass(slots=True)
class RunContext:
    """What a tool may ask for by annotating its first parameter with `RunContext`.

    Attributes:
        deps: the run's dependencies (`Case(context=...)`, `agent.run(deps=...)`).
        state: the sample's environment state (`Case(state=...)`), to read and change.
    """

    deps: Any = None
    messages: list[Message] = field(default_factory=list)
    turn: int = 0
    state: Any = None


class Tool:
    """A Python function the model can call: its argument schema from the type hints (through
    pydantic), its description from the docstring's first paragraph. A first parameter
    annotated `RunContext` (or named `ctx`), and parameters named `deps` or `state`, receive
    the run context, deps and environment state, hidden from the model.
    """

    def __init__(self, function: Callable[..., Any], *, name: str | None = None) -> None:
        self.function = function
        self.name = name or function.__name__
        known = _READ.get(function) if inspect.isfunction(function) else None
        if known is not None and known.name == self.name:
            # An agent factory builds its tools per sample: read a function's signature
            # and build its argument model once (~0.35 ms each), not every time.
            self.__dict__.update({k: v for k, v in known.__dict__.items() if k != "function"})
            return
        self._read(function)
        if inspect.isfunction(function):
            _READ[function] = self

    def _read(self, function: Callable[..., Any]) -> None:
        self.is_async = inspect.iscoroutinefunction(function)
        doc = inspect.getdoc(function) or ""
        self.description = doc.split("\n\n", 1)[0].strip()
        self._takes_ctx = False
        self._takes_deps = False
        self._takes_state = False
        hints = typing.get_type_hints(function)
        fields: dict[str, Any] = {}
        for index, (pname, param) in enumerate(inspect.signature(function).parameters.items()):
            annotation = hints.get(pname, Any)
            if index == 0 and (annotation is RunContext or pname == "ctx"):
                self._takes_ctx = True
                continue
            if pname == "deps":
                self._takes_deps = True
                continue
            if pname == "state":
                self._takes_state = True
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, default)
        self.arguments_model = pydantic.create_model(f"{self.name}_arguments", **fields)
        schema = self.arguments_model.model_json_schema()
        schema.pop("title", None)
        self.definition = ToolDef(self.name, self.description, schema)

    async def invoke(self, call: ToolCall, ctx: RunContext) -> None:
        """Run the tool for `call`, recording its result or error and latency on the call."""
        start = time.perf_counter()
        try:
            try:
                parsed = self.arguments_model.model_validate(call.arguments)
            except pydantic.ValidationError as exc:
                call.error = f"invalid arguments for tool {self.name!r}: {validation_message(exc, every=True)}"
                return
            kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
            if self._takes_deps:
                kwargs["deps"] = ctx.deps
            if self._takes_state:
                kwargs["state"] = ctx.state
            args = (ctx,) if self._takes_ctx else ()
            try:
                if self.is_async:
                    call.result = await self.function(*args, **kwargs)
                else:
                    call.result = await anyio.to_thread.run_sync(
                        lambda: self.function(*args, **kwargs), abandon_on_cancel=True
                    )
            except Exception as exc:  # a raising tool is an outcome the model sees
                call.error = f"{type(exc).__name__}: {exc}"
        finally:
            call.latency_ms = (time.perf_counter() - start) * 1000


_READ: weakref.WeakKeyDictionary[Callable[..., Any], Tool] = weakref.WeakKeyDictionary()
"""The tools made of each plain function, by function: what `Tool()` read from it."""


def tool_result_text(call: ToolCall) -> str:
    """The text sent back to the model for a finished call."""
    if call.error is not None:
        return f"Error: {call.error}"
    return value_text(call.result) if call.result is not None else "null"
