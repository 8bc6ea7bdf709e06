"""What the adapters share: SDK clients routed through tui-eval's HTTP layer (`routed`),
pricing usage the layer did not meter (`charge_unmetered`), missing extras (`require`)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

from tui_eval.agents.http.context import current_sample
from tui_eval.agents.http.metering import ResponseTokens
from tui_eval.agents.messages import RunResult
from tui_eval.agents.run_spec import AgentCall, Input, RunSpec
from tui_eval.util.errors import TuiEvalError


class MissingExtra(TuiEvalError, ImportError):
    """A framework adapter's package is not installed; the message names the extra."""


def require(module: str, extra: str) -> ModuleType:
    """Import `module`, or raise `MissingExtra` naming the extra that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is None or module.split(".")[0] != exc.name.split(".")[0]:
            raise
        raise MissingExtra(
            f"{module} is not installed: pip install 'tui-eval[{extra}]' "
            f"(No module named {exc.name!r})"
        ) from None


def routed(client: Any) -> Any:
    """A copy of an OpenAI/Anthropic async SDK client (public `with_options`) sending through
    tui-eval's HTTP layer, then its own httpx2 client with its configuration (read from the
    SDK's `_client`, never replaced); `client` itself if it already does; else None."""
    import httpx2

    from tui_eval.agents.http.client import LayeredClient, http_client

    theirs = getattr(client, "_client", None)  # the SDK's httpx2 client: read, never replaced
    if isinstance(theirs, LayeredClient):
        return client
    if not isinstance(theirs, httpx2.AsyncClient) or not hasattr(client, "with_options"):
        return None
    if type(theirs).__name__ == "AsyncHttpxClientWrapper":
        # The client the SDK made because the user gave none (OpenAI's and Anthropic's name
        # for it): no configuration of the user's to keep, and its connection pool, bound to
        # the first event loop it sent in, would outlive the run. tui-eval's sockets send.
        return client.with_options(http_client=http_client())
    return client.with_options(http_client=http_client(send_with=theirs))


def requests_so_far() -> int | None:
    """The current sample's requests through the layer so far (for `charge_unmetered`)."""
    sample = current_sample()
    return sample.meter.requests if sample is not None else None


def charge_unmetered(
    usages: Iterable[tuple[str, str, ResponseTokens]], *, since: int | None = None
) -> None:
    """Price usage a framework reported, (provider, model, tokens) per response, into the
    current sample's meter, unless the layer metered those requests already.

    Args:
        since: `requests_so_far()` when the run began. None (a result converted outside a
            run): priced per turn, unless any of the turn's requests passed the layer.
    """
    sample = current_sample()
    if sample is None:
        return
    meter = sample.meter
    if meter.requests > (since if since is not None else meter.turn_start):
        return
    if since is None and meter.external:
        return
    meter.external = True
    for provider, model, tokens in usages:
        cost = sample.run.runtime.price_of(provider, model, tokens)
        if cost is not None:
            meter.cost += cost
            meter.priced = True


def warn_if_uncached(adapter: Any, since: int | None) -> None:
    """Warn once per adapter when a run has a cache that its model calls bypass."""
    sample = current_sample()
    if since is None or sample is None or sample.run.cache is None:
        return
    if sample.meter.requests > since or getattr(adapter, "_warned", False):
        return
    adapter._warned = True
    warnings.warn(
        f"--cache does not apply to {adapter!r}: its model calls do not go through "
        "tui-eval's HTTP client (pass http_client=tui_eval.http_client() to its SDK client); "
        "its usage is still priced",
        UserWarning,
        stacklevel=2,
    )


def field_of(raw: Any, name: str) -> Any:
    """`raw[name]` of a mapping, else its attribute `name` (None when it has none)."""
    return raw.get(name) if isinstance(raw, Mapping) else getattr(raw, name, None)


class WrappedAgent:
    """What an adapter's `wrap` returns: an agent source with an async `run(input)`."""

    @property
    def keeps_memory(self) -> bool:
        """Whether the agent keeps its own memory of a conversation's turns."""
        return False

    async def run(self, input: Input, *, deps: Any = None, thread: str | None = None) -> RunResult:
        """Run the agent once and convert its result."""
        raise NotImplementedError

    async def forget_thread(self, thread: str) -> None:
        """Let the memory of a finished conversation go."""

    def sample_runner(self) -> AgentCall:
        """The per-sample call (`evaluate()` uses it instead of `run`, to pass deps)."""

        async def run(spec: RunSpec) -> RunResult:
            return await self.run(spec.input, deps=spec.deps, thread=spec.thread)

        if self.keeps_memory:
            run.keeps_memory = True  # type: ignore[attr-defined]
            run.forget_thread = self.forget_thread  # type: ignore[attr-defined]
        return run
