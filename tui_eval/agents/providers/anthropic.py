"""The Anthropic messages provider: tool use blocks, usage, `ANTHROPIC_API_KEY`."""

from __future__ import annotations

import json
import os
from typing import Any

from tui_eval.agents.http.metering import response_tokens
from tui_eval.agents.messages import Completion, Message, ToolCall, Usage, to_anthropic
from tui_eval.agents.providers.api import HTTPProvider, malformed
from tui_eval.agents.providers.base import (
    ModelSpecError,
    ToolDef,
    normalize_stop_reason,
)
from tui_eval.agents.providers.openai import schema_instructions

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


class AnthropicProvider(HTTPProvider):
    """Anthropic's messages API. Structured output is asked for in the system prompt."""

    provider_name = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
        **options: Any,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL,
            api_key=api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY"),
            **options,
        )
        self.max_tokens = max_tokens

    def headers(self) -> dict[str, str]:
        """The headers every request of this provider carries (the key among them)."""
        headers = {"anthropic-version": API_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def read(self, body: dict[str, Any]) -> Completion:
        """A response body as a `Completion`."""
        return from_wire(body)

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        *,
        output_schema: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Completion:
        """One messages-API call."""
        system, wire = to_anthropic(messages)
        if output_schema is not None:
            system = "\n\n".join(p for p in (system, schema_instructions(output_schema)) if p)
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": (settings or {}).get("max_tokens") or self.max_tokens,
            "messages": wire,
        }
        if system:
            payload["system"] = system
        if tools:
            payload["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
        given = settings or {}
        kept = ("temperature", "top_p", "stop_sequences")
        payload.update({k: given[k] for k in kept if given.get(k) is not None})
        return await self.post("/v1/messages", payload)


def from_wire(body: dict[str, Any]) -> Completion:
    """A messages-API response as a `Completion`."""
    blocks = body.get("content")
    if not isinstance(blocks, list):
        raise malformed("anthropic", f"no content blocks in {json.dumps(body)[:200]}")
    texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    calls = [
        ToolCall(str(b.get("name", "")), dict(b.get("input") or {}), str(b.get("id") or ""))
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    tokens = response_tokens(body)  # a server's numbers, checked; cache reads and writes in
    return Completion(
        content="".join(texts) if texts else None,
        tool_calls=calls,
        usage=Usage(tokens.input, tokens.output, 1),
        stop_reason=normalize_stop_reason(body.get("stop_reason")),
        id=str(body.get("id") or ""),
        model=str(body.get("model") or ""),
    )


def from_spec(model: str) -> AnthropicProvider:
    """`anthropic:MODEL` — needs `ANTHROPIC_API_KEY`."""
    if not os.environ.get("ANTHROPIC_API_KEY"):
        raise ModelSpecError(f"anthropic:{model} needs an API key: set ANTHROPIC_API_KEY")
    return AnthropicProvider(model)
