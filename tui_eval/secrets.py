"""Keeping secrets out of reports, journals, errors and the screen."""

from __future__ import annotations

import os

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


def redact(text: str) -> str:
    """`text` with every secret from the environment replaced by `***`.

    Providers already redact their own keys; this also catches keys that an agent's own
    code puts into an exception message or a traceback.
    """
    for value in secret_values():
        if value in text:
            text = text.replace(value, "***")
    return text
