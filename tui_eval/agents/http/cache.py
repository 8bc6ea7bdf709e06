"""The opt-in response cache: replay a run's model answers at zero cost.

Keyed by provider, base URL, body, **sample index** and headers (a key by its hash), so a
case's samples never collapse into one answer and an answer goes only to the key that
asked. 2xx answers only, owner-only files, secrets replaced by `***`. Files are read and
written in the cache's own threads (not the sync agents', which a run may hold).
"""

from __future__ import annotations

import functools
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
THREADS = 4  # Files read or written at once.


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
        self._environment: list[str] | None = None  # the environment's secrets, at first write
        self._threads: tuple[object, anyio.CapacityLimiter] | None = None

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

    async def get(self, key: str) -> dict[str, Any] | bytes | None:
        """The stored JSON object or event stream (bytes); None for a miss."""
        found: dict[str, Any] | bytes | None = await self._in_thread(self._read, key)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def _read(self, key: str) -> dict[str, Any] | bytes | None:
        path = self._path(key)
        try:
            stored = json.loads(path.read_bytes())
        except (OSError, ValueError):
            try:
                return path.with_suffix(".sse").read_bytes()
            except OSError:
                return None
        return stored if isinstance(stored, dict) else None

    def miss(self) -> None:
        """Count a stored entry its reader could not use (`{}`, no choices) as a miss."""
        self.hits -= 1
        self.misses += 1

    async def put(
        self, key: str, response: dict[str, Any] | bytes, secrets: Iterable[str] = ()
    ) -> None:
        """Store a 2xx answer (not in read-only mode), `secrets` and the environment's redacted."""
        if self.mode == "on":
            await self._in_thread(self._write, key, response, list(secrets))

    def _write(self, key: str, response: dict[str, Any] | bytes, secrets: list[str]) -> None:
        if self._private:
            private_subfolder("cache")
            self._private = False
        if self._environment is None:
            self._environment = secret_values()
        found = sorted({*secrets, *self._environment}, key=len, reverse=True)
        path = self._path(key)
        if isinstance(response, bytes):
            path = path.with_suffix(".sse")
            text = redact_value(response.decode("utf-8", "replace"), found)
        else:
            text = json.dumps(redact_value(response, found) if found else response)
        atomic_write_bytes(path, text.encode(), private=True)

    async def _in_thread(self, work: Any, *args: Any) -> Any:
        """`work(*args)` in one of the cache's own threads (those of the running loop)."""
        loop = anyio.lowlevel.current_token()
        if self._threads is None or self._threads[0] != loop:
            self._threads = (loop, anyio.CapacityLimiter(THREADS))
        call = functools.partial(work, *args)
        return await anyio.to_thread.run_sync(call, limiter=self._threads[1])
