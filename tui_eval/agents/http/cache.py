"""The opt-in response cache: replay a run's model answers at zero cost.

A response is stored under a key made of the provider, its base URL, the whole request
body, the **sample index** and the request's headers — those that select a tenant
(`OpenAI-Project`, `OpenAI-Organization`, `anthropic-version`...) and the API key, which
enters only through the key's one-way hash — so the samples of a case never collapse
into one answer, and an answer goes back only to the project and key that asked for it.
Only successful responses are stored (a JSON body as `KEY.json`, an event stream whole as
`KEY.sse`); errors and rate limits always go to the API. Files
live under `$TUI_EVAL_HOME/cache/responses/`, one JSON file per response, owner-only
(0600, in 0700 folders), with every secret of the request (and of the environment)
replaced by `***`: a model that echoes the key leaves no key on disk.

Modes: `"on"` reads and writes; `"read-only"` reads, and sends misses to the API without
storing them (replaying a CI run without growing the cache).

An answer is stored beside the event loop, not on it: redacting, writing, fsyncing and
renaming the file run in a worker thread (at most `WRITERS` at once) while the loop serves
the other samples, and the request's answer waits for its write, so a run that has ended
has stored everything. The environment's secrets are read once per cache (a run's cache
is made when the run starts), at its first write; the request's own credentials are
read from each request.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.lowlevel
import anyio.to_thread

from tui_eval.util.atomic import atomic_write_bytes
from tui_eval.util.home import data_root, private_subfolder
from tui_eval.util.secrets import redact_value, secret_values

CacheMode = Literal["off", "on", "read-only"]
CACHE_MODES: tuple[CacheMode, ...] = ("off", "on", "read-only")
WRITERS = 4
"""Answers stored at once, each in a worker thread of its own (not the threads sync agents
run in: an agent's request waiting for a thread its own run holds would never end)."""


class ResponseCache:
    """Stored responses in `folder` (default: the data folder's `cache/responses`)."""

    def __init__(self, mode: CacheMode = "on", folder: Path | None = None) -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode must be one of {', '.join(CACHE_MODES)}, got {mode!r}")
        self.mode = mode
        self.folder = folder or data_root() / "cache" / "responses"
        self._private = folder is None  # tighten the data folder's `cache` once, on first write
        self.hits = 0
        self.misses = 0
        self._environment: list[str] | None = None
        """The environment's secrets, read at the first write."""
        self._writers: tuple[anyio.lowlevel.EventLoopToken, anyio.CapacityLimiter] | None = None

    def __repr__(self) -> str:
        return f"ResponseCache({self.mode!r}, {str(self.folder)!r})"

    @staticmethod
    def key(
        provider: str,
        base_url: str,
        body: bytes,
        sample_index: int,
        headers: Iterable[tuple[bytes, bytes]] = (),
    ) -> str:
        """The key of one request of one sample, sent with `headers` (names in any case)."""
        digest = hashlib.sha256()
        for part in (provider.encode(), base_url.encode(), str(sample_index).encode()):
            digest.update(part)
            digest.update(b"\0")
        for name, value in sorted((name.lower(), value) for name, value in headers):
            digest.update(name + b":" + hashlib.sha256(value).digest() + b"\0")
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

    def get_stream(self, key: str) -> bytes | None:
        """A stored event stream (an SDK's `stream=True` request), or None."""
        try:
            stored = self._path(key).with_suffix(".sse").read_bytes()
        except OSError:
            return None
        self.hits += 1
        return stored

    async def put_stream(self, key: str, stream: bytes, secrets: Iterable[str] = ()) -> None:
        """Store a whole event stream as `put` stores a response."""
        await self._store(
            self._path(key).with_suffix(".sse"), stream.decode("utf-8", "replace"), secrets
        )

    def miss(self) -> None:
        """Count a stored entry its provider could not use (`{}`, no choices) as a miss."""
        self.hits -= 1
        self.misses += 1

    async def put(self, key: str, response: dict[str, Any], secrets: Iterable[str] = ()) -> None:
        """Store a successful response (not in read-only mode), `secrets` and those of the
        environment redacted, readable by its owner only — in a worker thread, returning
        when the file is in place. `response` must not change until then."""
        await self._store(self._path(key), response, secrets)

    async def _store(self, path: Path, stored: Any, secrets: Iterable[str]) -> None:
        if self.mode != "on":
            return
        if self._private:
            private_subfolder("cache")
            self._private = False
        if self._environment is None:
            self._environment = secret_values()
        found = sorted({*secrets, *self._environment}, key=len, reverse=True)
        await anyio.to_thread.run_sync(_write, path, stored, found, limiter=self._limiter())

    def _limiter(self) -> anyio.CapacityLimiter:
        """The writers' limiter of the running event loop (a later loop gets its own)."""
        loop = anyio.lowlevel.current_token()
        writers = self._writers
        if writers is None or writers[0] != loop:
            writers = self._writers = (loop, anyio.CapacityLimiter(WRITERS))
        return writers[1]


def _write(path: Path, stored: Any, secrets: list[str]) -> None:
    """Store `stored` (a response, or an event stream's text) at `path`, atomically, with
    every one of `secrets` redacted (a worker thread's part of `put`)."""
    stored = redact_value(stored, secrets) if secrets else stored
    text = stored if isinstance(stored, str) else json.dumps(stored)
    atomic_write_bytes(path, text.encode(), private=True)
