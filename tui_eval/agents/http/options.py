"""`ProviderOptions`: how HTTP providers talk to their API. Later sources win, field by
field: constructor, model spec (`?rpm=600`), a suite's `provider:` block, command line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pydantic

DEFAULT_TIMEOUT_S = 600.0
"""As the SDKs have it: a long generation is waited for, not cut off and paid for again."""
DEFAULT_RETRY_BUDGET_S = 600.0
DEFAULT_MAX_RETRIES = 2
"""As the SDKs do: each attempt of a long request may be billed."""

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
CLIENT_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "te"})
"""Headers the HTTP client sets: given again, a request is framed twice (smuggling shape)."""


def header_problem(name: str, value: str) -> str | None:
    """What is wrong with sending header `name` (None: nothing), never showing its value."""
    if not _TOKEN.fullmatch(name):
        return f"header name {name!r} is not a valid HTTP header name"
    if name.lower() in CLIENT_HEADERS:
        return f"header {name!r} is set by the HTTP client and cannot be given"
    for char, what in (("\r", "a carriage return"), ("\n", "a line break"), ("\0", "a NUL")):
        if char in value:
            return (
                f"header {name!r} holds {what} in its value (an API key read from a file "
                "with its newline?); refused before anything was sent"
            )
    return None


def merged_headers(*layers: Mapping[str, str]) -> dict[str, str]:
    """The headers of `layers`, a later one replacing an earlier of the same name, any case."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        for name, value in layer.items():
            merged[name.lower()] = (name, value)
    return dict(merged.values())


class ProviderOptions(pydantic.BaseModel):
    """How an HTTP provider talks to its API. Unset fields keep the provider's own value.

    Attributes:
        timeout: seconds for one whole request, from sending it to the last byte (600).
        retry_budget: seconds a request keeps waiting out rate limits and retrying,
            counted from the later of its start and the last response the API accepted
            from anyone in the process (600): it fails only when the run stops progressing.
        max_retries: retries after server errors, timeouts and connection errors (2); 429s
            are not counted (they wait in the shared rate limiter).
        rpm: requests per minute never to exceed (otherwise learned from the API).
        tpm: tokens per minute never to exceed (otherwise learned from the API).
        base_url: send requests here instead (a proxy, a local server).
        headers: extra request headers (a name that is not a token, a value holding CR,
            LF or NUL, or a header the client sets itself is an error naming the header).
        api_version: Azure OpenAI's `api-version` query parameter (`api-version=...` in a
            spec, or in `base_url`'s query).
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    timeout: float | None = pydantic.Field(None, gt=0)
    retry_budget: float | None = pydantic.Field(None, ge=0)
    max_retries: int | None = pydantic.Field(None, ge=0)
    rpm: float | None = pydantic.Field(None, gt=0)
    tpm: float | None = pydantic.Field(None, gt=0)
    base_url: str | None = None
    headers: dict[str, str] = pydantic.Field(default_factory=dict)
    api_version: str | None = None

    @pydantic.field_validator("headers")
    @classmethod
    def _sendable(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            problem = header_problem(name, value)
            if problem is not None:
                raise ValueError(problem)
        return merged_headers(headers)  # `X-A` and `x-a` given: the later one

    def over(self, other: ProviderOptions | None) -> ProviderOptions:
        """These options with the fields set in `other` taking their place (headers merged)."""
        if other is None:
            return self
        changes: dict[str, Any] = {
            name: getattr(other, name)
            for name in other.model_fields_set
            if name != "headers" and getattr(other, name) is not None
        }
        if other.headers:
            changes["headers"] = merged_headers(self.headers, other.headers)
        return self.model_copy(update=changes) if changes else self

    @property
    def is_empty(self) -> bool:
        """Whether no option is set."""
        return not self.headers and all(
            getattr(self, name) is None for name in type(self).model_fields if name != "headers"
        )
