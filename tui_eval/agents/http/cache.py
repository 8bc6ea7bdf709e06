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
renaming the file run in a worker thread while the loop serves the other samples, and the
request's answer waits for its write, so a run that has ended has stored everything. One
thread writes at a time: the answers that arrive meanwhile wait, and the first of them
then takes them all (up to `BATCH`) to the thread at once and fsyncs them together — a
hand-off to a thread and back cost about as much CPU as a write, and fsyncs one by one
or side by side twice what they cost together. Each file is still written atomically on
its own, and an error reaches only its own answer's request. The environment's
secrets are read once per cache (a run's cache is made when the run starts), at its first
write; the request's own credentials are read from each request.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.lowlevel
import anyio.to_thread

from tui_eval.util.atomic import atomic_write_all
from tui_eval.util.home import data_root, private_subfolder
from tui_eval.util.secrets import redact_value, secret_values

CacheMode = Literal["off", "on", "read-only"]
CACHE_MODES: tuple[CacheMode, ...] = ("off", "on", "read-only")
BATCH = 32
"""Answers written in one turn of the worker thread at most: each holds a file open until
the batch is fsynced, and each put of a batch is woken in the same turn of the loop."""


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
        self._writes: _Writes | None = None

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
        write = _Write(path, stored, found)
        writes = self._writes_now()
        writes.waiting.append(write)
        if writes.busy:
            try:
                await write.turn.wait()  # its file is in place, or it is to write the queue
            except BaseException:
                writes.leave(write)
                raise
            if write.done:
                _wake_next(write.batch)
        if not write.done:
            await writes.write_waiting(write)
        if write.error is not None:
            raise write.error

    def _writes_now(self) -> _Writes:
        """The queue of writes of the running event loop (a later loop gets its own)."""
        loop = anyio.lowlevel.current_token()
        writes = self._writes
        if writes is None or writes.loop != loop:
            writes = self._writes = _Writes(loop)
        return writes


@dataclass(eq=False)
class _Write:
    """One answer to store, and how that went."""

    path: Path
    stored: Any
    secrets: list[str]
    turn: anyio.Event = field(default_factory=anyio.Event)
    """Set when its file is in place (`done`) and the put before it has gone on, or when
    its put is to write the queue."""
    done: bool = False
    error: Exception | None = None
    batch: deque[_Write] = field(default_factory=deque)
    """The puts of its batch still to wake, once its file is in place."""
    left: bool = False
    """Its put was cancelled while it waited: wake the next instead."""


@dataclass(eq=False)
class _Writes:
    """The answers waiting to be stored on one event loop, and whether a write is under way.

    The put that finds no write under way writes everything waiting (its own answer
    included, up to `BATCH`) in one worker thread, and hands its turn to the first put
    still waiting, if any: one write at a time, each put waiting for its own file only as
    long as the batch before it takes. The puts of a batch go on one turn of the event
    loop apart, each waking the next: woken at once, each request's next step would run
    in the same turn (at 200 conversations in flight, ~16 ms of a batch of 32 without a
    pause for the rest of the run).
    """

    loop: anyio.lowlevel.EventLoopToken
    waiting: list[_Write] = field(default_factory=list)
    busy: bool = False
    limiter: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(1))
    """Its own thread (not those sync agents run in: an agent's request waiting for a
    thread its own run holds would never end)."""

    async def write_waiting(self, mine: _Write) -> None:
        """Write every answer waiting, `mine` among them, in the worker thread."""
        self.busy = True
        batch, self.waiting = self.waiting[:BATCH], self.waiting[BATCH:]
        try:
            # Not abandoned on cancellation: once the thread has started, each file of the
            # batch is in place, or its error known, before any of their puts goes on.
            await anyio.to_thread.run_sync(_write_all, batch, limiter=self.limiter)
        finally:
            # Cancelled before the thread started: the others still there wait for the next
            # turn (one that left meanwhile would take the turn with it).
            self.waiting[:0] = [
                write for write in batch if not (write.done or write.left or write is mine)
            ]
            woken = deque(write for write in batch if write.done and write is not mine)
            for write in woken:
                write.batch = woken
            _wake_next(woken)
            self._pass_turn()

    def leave(self, write: _Write) -> None:
        """A put cancelled while it waited: its answer is not stored (unless its batch is
        already being written), and a turn handed to it goes to the next put."""
        write.left = True
        if write in self.waiting:
            self.waiting.remove(write)
        if write.turn.is_set():
            if write.done:
                _wake_next(write.batch)
            else:
                self._pass_turn()

    def _pass_turn(self) -> None:
        self.busy = bool(self.waiting)
        if self.waiting:
            self.waiting[0].turn.set()


def _wake_next(batch: deque[_Write]) -> None:
    """Wake the next put of `batch` whose file is in place (one that left is passed by)."""
    while batch:
        write = batch.popleft()
        if not write.left:
            write.turn.set()
            return


def _write_all(batch: list[_Write]) -> None:
    """Store each answer of `batch` with every one of its secrets redacted, each error kept
    with its own answer (the worker thread's part of `put`)."""
    files: list[tuple[Path, bytes]] = []
    written: list[_Write] = []
    for write in batch:
        try:
            stored = redact_value(write.stored, write.secrets) if write.secrets else write.stored
            text = stored if isinstance(stored, str) else json.dumps(stored)
        except Exception as error:  # not JSON: fails its own put only
            write.error, write.done = error, True
        else:
            files.append((write.path, text.encode()))
            written.append(write)
    for write, failed in zip(written, atomic_write_all(files, private=True), strict=True):
        write.error, write.done = failed, True
