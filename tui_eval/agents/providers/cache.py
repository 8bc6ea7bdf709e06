"""The opt-in response cache: replay a run's model answers at zero cost.

A response is stored under a key made of the provider, its base URL, the whole request
body and the **sample index**, so the samples of a case never collapse into one answer:
sample 3 of a rerun gets what sample 3 got before. Only successful responses are stored;
errors and rate limits always go to the API. Files live under
`$TUI_EVAL_HOME/cache/responses/`, one JSON file per response.

Modes: `"on"` reads and writes; `"read-only"` reads, and sends misses to the API without
storing them (replaying a CI run without growing the cache).
"""

from __future__ import annotations

import hashlib
import json
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from tui_eval.atomic import atomic_write_bytes
from tui_eval.home import data_root

CacheMode = Literal["off", "on", "read-only"]
CACHE_MODES: tuple[CacheMode, ...] = ("off", "on", "read-only")


class ResponseCache:
    """Stored responses in `folder` (default: the data folder's `cache/responses`)."""

    def __init__(self, mode: CacheMode = "on", folder: Path | None = None) -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode must be one of {', '.join(CACHE_MODES)}, got {mode!r}")
        self.mode = mode
        self.folder = folder or data_root() / "cache" / "responses"
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"ResponseCache({self.mode!r}, {str(self.folder)!r})"

    @staticmethod
    def key(provider: str, base_url: str, body: bytes, sample_index: int) -> str:
        """The key of one request of one sample."""
        digest = hashlib.sha256()
        for part in (provider.encode(), base_url.encode(), str(sample_index).encode()):
            digest.update(part)
            digest.update(b"\0")
        digest.update(body)
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response, or None (an unreadable entry counts as a miss)."""
        try:
            stored = json.loads(self._path(key).read_bytes())
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(stored, dict):
            self.misses += 1
            return None
        self.hits += 1
        return stored

    def put(self, key: str, response: dict[str, Any]) -> None:
        """Store a successful response (not in read-only mode)."""
        if self.mode == "on":
            atomic_write_bytes(self._path(key), json.dumps(response).encode())


run_cache: ContextVar[ResponseCache | None] = ContextVar("tui_eval_response_cache", default=None)
"""Set by the runner for a run with `cache` on."""
