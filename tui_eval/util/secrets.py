"""Keeping secrets out of reports, journals, errors and the screen."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from pydantic_core import to_jsonable_python

SECRET_SUFFIXES = ("_API_KEY", "_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
MIN_SECRET_LENGTH = 8


def secret_values() -> list[str]:
    """Values of environment variables whose names mark them as secrets (longest first)."""
    values = {
        value
        for name, value in os.environ.items()
        if name.upper().endswith(SECRET_SUFFIXES) and len(value) >= MIN_SECRET_LENGTH
    }
    return sorted(values, key=len, reverse=True)


def is_credential_header(name: str) -> bool:
    """Whether a request header's name marks its value as a credential (Authorization,
    `*key*`, `*token*`, `*secret*`, cookies): never written to disk."""
    lowered = name.lower()
    return lowered in ("authorization", "proxy-authorization") or any(
        word in lowered for word in ("key", "token", "secret", "cookie", "auth", "password")
    )


def credential_values(api_key: str | None, headers: Iterable[tuple[str, str]]) -> list[str]:
    """The secrets a request carries: its key, and its credential headers' values (with
    and without their scheme: `Bearer sk-...` and `sk-...`), longest first."""
    found = {api_key} if api_key else set()
    for name, value in headers:
        if is_credential_header(name) and value:
            found.add(value)
            found.add(value.split()[-1])
    return sorted((v for v in found if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def redact(text: str) -> str:
    """`text` with every secret from the environment replaced by `***`.

    Providers already redact their own keys; this also catches keys that an agent's own
    code puts into an exception message or a traceback.
    """
    for value in secret_values():
        if value in text:
            text = text.replace(value, "***")
    return text


def redact_value(value: Any, secrets: list[str] | None = None) -> Any:
    """`value` with every secret replaced by `***` in every string inside it.

    Containers are rebuilt only where a secret was found; an object holding one (a
    pydantic model, a dataclass) comes back as its JSON form with the secret redacted,
    anything else as it was.
    """
    found = secret_values() if secrets is None else secrets
    if not found:
        return value
    return _redact(value, found)


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, "***")
        return value
    if value is None or isinstance(value, (bool, int, float, bytes)):
        return value
    if isinstance(value, dict):
        items = {_redact(k, secrets): _redact(v, secrets) for k, v in value.items()}
        changed = any(a is not b for a, b in zip(items.values(), value.values(), strict=True))
        return items if changed or list(items) != list(value) else value
    if isinstance(value, (list, tuple)):
        redacted = [_redact(item, secrets) for item in value]
        changed = any(a is not b for a, b in zip(redacted, value, strict=True))
        return (redacted if isinstance(value, list) else tuple(redacted)) if changed else value
    try:
        plain = to_jsonable_python(value, fallback=repr)
    except (ValueError, TypeError, RecursionError):
        return value
    redacted = _redact(plain, secrets)
    return redacted if redacted is not plain else value
