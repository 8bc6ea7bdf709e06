"""The OpenAI-compatible chat-completions provider (OpenAI, vLLM, Ollama, llama.cpp, LM Studio…)."""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlsplit

from tui_eval.agents.http.metering import response_tokens
from tui_eval.agents.messages import (
    UNKNOWN_STOP_REASON,
    Completion,
    Message,
    ToolCall,
    Usage,
    to_openai,
)
from tui_eval.agents.providers.api import HTTPProvider, malformed
from tui_eval.agents.providers.base import (
    ModelSpecError,
    ProviderError,
    ToolDef,
    normalize_stop_reason,
    parse_arguments,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"
SETTINGS = tuple(
    ["temperature", "seed", "max_tokens", "top_p", "stop", "presence_penalty", "frequency_penalty"]
)


def schema_instructions(schema: dict[str, Any]) -> str:
    """The fallback for servers without structured output: ask for JSON in words."""
    return (
        "Reply with only a JSON object (no prose, no code fence) that validates against this JSON schema:\n"
        + json.dumps(schema)
    )


class OpenAIProvider(HTTPProvider):
    """Chat completions over HTTP. Structured output uses the JSON-schema response format;
    a server that rejects it is asked with the schema in the instructions from then on."""

    provider_name = "openai"

    def __init__(
        self, model: str, *, base_url: str | None = None, api_key: str | None = None, **options: Any
    ) -> None:
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY")
            if api_key is None and is_azure(base_url):
                api_key = os.environ.get("AZURE_OPENAI_API_KEY")
        super().__init__(model, base_url=base_url, api_key=api_key, **options)
        self.json_schema_supported: bool | None = None

    def headers(self) -> dict[str, str]:
        """The key as a bearer token (Azure OpenAI: as its `api-key` header)."""
        if not self._api_key:
            return {}
        if self.options.api_version or is_azure(self.base_url):
            return {"api-key": self._api_key}
        return {"Authorization": f"Bearer {self._api_key}"}

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
        """One chat completion."""
        payload: dict[str, Any] = {"model": self.model, "messages": to_openai(messages)}
        if tools:
            payload["tools"] = [  # not `asdict`: it deep-copies every schema, every request
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
        given = settings or {}
        payload.update({k: given[k] for k in SETTINGS if given.get(k) is not None})
        if output_schema is not None:
            if self.json_schema_supported is False:
                payload["messages"] = _with_instructions(
                    payload["messages"], schema_instructions(output_schema)
                )
            else:
                payload["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": str(output_schema.get("title", "output"))[:64],
                        "schema": output_schema,
                    },
                }
        try:
            completion = await self.post("/chat/completions", payload)
        except ProviderError as exc:
            if (
                output_schema is None
                or "response_format" not in payload
                or "response_format" not in str(exc)
            ):
                raise
            # The server does not do structured output: ask in words instead.
            self.json_schema_supported = False
            return await self.complete(
                messages, tools, output_schema=output_schema, settings=settings
            )
        if output_schema is not None and "response_format" in payload:
            self.json_schema_supported = True
        return completion


def is_azure(base_url: str) -> bool:
    """Whether `base_url` is an Azure OpenAI endpoint (it takes its key as `api-key`)."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host.endswith((".openai.azure.com", ".cognitiveservices.azure.com")) or (
        "/openai/deployments/" in urlsplit(base_url).path
    )


def _with_instructions(messages: list[dict[str, Any]], extra: str) -> list[dict[str, Any]]:
    if messages and messages[0].get("role") == "system":
        first = dict(messages[0], content=f"{messages[0]['content']}\n\n{extra}")
        return [first, *messages[1:]]
    return [{"role": "system", "content": extra}, *messages]


def from_wire(body: dict[str, Any]) -> Completion:
    """A chat-completions response as a `Completion`."""
    try:
        choice = body["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError(message)
    except (KeyError, IndexError, TypeError):
        raise malformed("openai", f"no choices[0].message in {json.dumps(body)[:200]}") from None
    calls = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") or {}
        parsed, error = parse_arguments(function.get("arguments") or "{}")
        call = ToolCall(str(function.get("name", "")), parsed, str(raw.get("id") or ""))
        call.error = error
        calls.append(call)
    tokens = response_tokens(body)  # a server's numbers, checked
    content = message.get("content")
    finish = choice.get("finish_reason")
    # vLLM and others may send null: the reason is unknown, not absent from the agent.
    stop_reason = UNKNOWN_STOP_REASON if finish is None else normalize_stop_reason(finish)
    refusal = message.get("refusal")
    if refusal:
        # A refusal comes with no content: keep its words as the answer, and say so.
        content = content or str(refusal)
        stop_reason = "refusal"
    return Completion(
        content=content,
        tool_calls=calls,
        usage=Usage(tokens.input, tokens.output, 1),
        stop_reason=stop_reason,
        id=str(body.get("id") or ""),
        model=str(body.get("model") or ""),
    )


def from_spec(model: str) -> OpenAIProvider:
    """`openai:MODEL` — needs `OPENAI_API_KEY` (and honours `OPENAI_BASE_URL`)."""
    if not os.environ.get("OPENAI_API_KEY"):
        raise ModelSpecError(f"openai:{model} needs an API key: set OPENAI_API_KEY")
    return OpenAIProvider(model)


def from_compatible_spec(rest: str) -> OpenAIProvider:
    """`openai-compatible:MODEL@BASE_URL` — a key is optional (`OPENAI_API_KEY` if set);
    an Azure deployment's URL carries `?api-version=...`."""
    model, sep, base_url = rest.partition("@")
    if not sep or not model or not base_url.startswith(("http://", "https://")):
        raise ModelSpecError(
            f"openai-compatible:{rest} should be openai-compatible:MODEL@BASE_URL, "
            "e.g. openai-compatible:llama3.1@http://localhost:11434/v1"
        )
    return OpenAIProvider(model, base_url=base_url)
