"""Keeping secrets out of reports, journals, errors and the screen."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

from pydantic_core import to_jsonable_python

SECRET_SUFFIXES = ("_API_KEY", "_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
MIN_SECRET_LENGTH = 8


URL_VARIABLES = ("_PROXY", "_BASE_URL")
"""Environment variables holding URLs whose credentials (`user:password@`) are secrets."""


def secret_values() -> list[str]:
    """Secret environment variables' values and proxy and base-URL credentials, longest first."""
    values = {
        value
        for name, value in os.environ.items()
        if name.upper().endswith(SECRET_SUFFIXES) and len(value) >= MIN_SECRET_LENGTH
    }
    for name, value in os.environ.items():
        if name.upper().endswith(URL_VARIABLES):
            values.update(url_credentials(value))
    return sorted(values, key=len, reverse=True)


def split_credentials(url: str) -> tuple[str, str | None]:
    """`url` without its `user:password@`, and that part (or None), read as curl does: all
    before the authority's last `@`, even a `#`, `/` or `?`."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority_end = len(rest)
    at = rest.rfind("@")
    if at < 0:
        return url, None
    for mark in "/?#":  # the authority ends at the first of these after the last @
        found = rest.find(mark, at)
        if found >= 0:
            authority_end = min(authority_end, found)
    userinfo, host = rest[:at], rest[at + 1 : authority_end]
    bare = f"{host}{rest[authority_end:]}"
    return (f"{scheme}://{bare}" if sep else bare), userinfo


def without_credentials(url: str) -> str:
    """`url` as shown anywhere: its credentials as `***@`."""
    bare, userinfo = split_credentials(url)
    if userinfo is None:
        return url
    scheme, sep, rest = bare.partition("://")
    return f"{scheme}://***@{rest}" if sep else f"***@{bare}"


def url_credentials(url: str) -> set[str]:
    """A URL's secrets: its `user:password` (raw and unquoted; a lone user name, which may be
    a token), and a password long enough to look for alone."""
    _, userinfo = split_credentials(url)
    if not userinfo:
        return set()
    _, colon, password = userinfo.partition(":")
    found = {userinfo, unquote(userinfo)}
    if colon and len(password) >= MIN_SECRET_LENGTH:
        found |= {password, unquote(password)}
    return {value for value in found if value}


def is_credential_header(name: str) -> bool:
    """Whether a header holds a credential (never written to disk)."""
    lowered = name.lower()
    return lowered in ("authorization", "proxy-authorization") or any(
        word in lowered for word in ("key", "token", "secret", "cookie", "auth", "password")
    )


def credential_values(api_key: str | None, headers: Iterable[tuple[str, str]]) -> list[str]:
    """A request's secrets: its key and credential headers' values, with and without their
    scheme (`Bearer sk-...`, `sk-...`), longest first."""
    found = {api_key} if api_key else set()
    for name, value in headers:
        if is_credential_header(name) and value:
            found.add(value)
            found.add(value.split()[-1])
    return sorted((v for v in found if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def redact_secrets(text: str, secrets: Iterable[str]) -> str:
    """`text` with each of `secrets` as `***`: a short one (under `MIN_SECRET_LENGTH`, a
    dummy key such as `x`) only as a whole word, lest every word become `***`."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if not secret:
            continue
        if len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, "***")
        elif secret in text:
            text = re.sub(rf"(?<![\w-]){re.escape(secret)}(?![\w-])", "***", text)
    return text


def redact(text: str) -> str:
    """`text` with every secret from the environment replaced by `***`."""
    return redact_secrets(text, secret_values())


def redact_value(value: Any, secrets: list[str] | None = None) -> Any:
    """`value` with every secret in its strings as `***`: containers rebuilt only where one
    was found, an object holding one as its JSON form."""
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
