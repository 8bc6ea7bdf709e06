"""What the adapters share: tui-eval's HTTP client installed into a framework's SDK
clients, usage the framework reports priced when its calls did not pass through it, and
the name of the extra to install when a framework is missing.

`install_http_client(agent)` finds the OpenAI and Anthropic SDK clients an agent holds (a
LangChain `ChatOpenAI`'s, an Agents SDK model's, a pydantic-ai provider's), however deep,
and routes their requests through `MeteredAsyncClient` (`MeteredClient` for sync ones):
the run's shared rate limiter, its response cache, the sample's meter and `max_cost`. The
client resolves the sample at each request (`current_sample()`), so one installation
serves every sample of every run.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterable, Mapping
from types import FunctionType, MethodType, ModuleType
from typing import Any

from tui_eval.agents.http.context import current_sample
from tui_eval.agents.http.metering import ResponseTokens
from tui_eval.util.errors import TuiEvalError

MAX_VISITED = 20_000
"""Objects looked at while searching an agent for SDK clients: a bound, not a walk of the
whole heap."""
SDK_PACKAGES = ("openai", "anthropic")


class MissingExtra(TuiEvalError, ImportError):
    """A framework adapter's package is not installed; the message names the extra."""


def require(module: str, extra: str) -> ModuleType:
    """Import `module`, or say which extra brings it.

    Raises:
        MissingExtra: `pip install 'tui-eval[EXTRA]'` brings it.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is None or module.split(".")[0] != exc.name.split(".")[0]:
            raise
        raise MissingExtra(
            f"{module} is not installed: pip install 'tui-eval[{extra}]' "
            f"(No module named {exc.name!r})"
        ) from None


def install_http_client(root: Any) -> int:
    """Route every OpenAI/Anthropic SDK client reachable from `root` through tui-eval's
    HTTP layer; returns how many clients route through it (installed now or before)."""
    import httpx2

    from tui_eval.agents.http.client import MeteredAsyncClient, MeteredClient

    found = 0
    for holder in _sdk_clients(root):
        current = holder._client
        if isinstance(current, MeteredAsyncClient | MeteredClient):
            found += 1
            continue
        if isinstance(current, httpx2.AsyncClient):
            holder._client = MeteredAsyncClient(timeout=current.timeout)
        elif isinstance(current, httpx2.Client):
            holder._client = MeteredClient(timeout=current.timeout)
        else:
            continue
        found += 1
    return found


def _sdk_clients(root: Any) -> Iterable[Any]:
    """SDK client objects (`openai.AsyncOpenAI`, `anthropic.Anthropic`...) reachable from
    `root` through attributes, containers and closures."""
    seen: set[int] = set()
    queue = [root]
    while queue and len(seen) < MAX_VISITED:
        item = queue.pop()
        if id(item) in seen or isinstance(item, str | bytes | int | float | bool | type | None):
            continue
        seen.add(id(item))
        if isinstance(item, ModuleType):
            continue
        module = (type(item).__module__ or "").split(".")[0]
        if module in SDK_PACKAGES and hasattr(item, "_client") and hasattr(item, "base_url"):
            yield item
            continue
        if isinstance(item, Mapping):
            queue.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            queue.extend(item)
        elif isinstance(item, MethodType):
            queue.append(item.__self__)
        elif isinstance(item, FunctionType):
            for cell in item.__closure__ or ():
                try:
                    queue.append(cell.cell_contents)
                except ValueError:  # an empty cell
                    continue
        else:
            fields = getattr(item, "__dict__", None)
            if isinstance(fields, dict):
                queue.extend(fields.values())
            for name in getattr(type(item), "__slots__", ()):
                if isinstance(name, str):
                    queue.append(getattr(item, name, None))


def requests_so_far() -> int | None:
    """How many requests of the current sample passed through tui-eval's HTTP layer (None
    outside a sample): an adapter reads it as its run starts, for `charge_unmetered`."""
    sample = current_sample()
    return sample.meter.requests if sample is not None else None


def charge_unmetered(
    usages: Iterable[tuple[str, str, ResponseTokens]], *, since: int | None = None
) -> None:
    """Price usage a framework reported, (provider, model, tokens) per response, into the
    current sample's meter — when none of its requests passed through tui-eval's HTTP
    layer (which metered them already). A model not in the price table leaves the sample
    unpriced.

    Args:
        since: `requests_so_far()` when the agent's run began: its usage is priced unless
            one of the requests since passed through the layer — each turn of a
            conversation is a run of its own, and a simulated user's requests are not
            the agent's. None (a result converted with no run around it): priced once a
            turn (a sample's only turn, or each of a conversation's), unless any of the
            turn's requests passed through the layer.
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


def warn_if_uncached(adapter: Any, installed: int) -> None:
    """Say once per adapter, when a run has a cache, that the agent's model calls bypass it."""
    sample = current_sample()
    if installed or sample is None or sample.run.cache is None:
        return
    if getattr(adapter, "_warned", False):
        return
    adapter._warned = True
    warnings.warn(
        f"--cache does not apply to {adapter!r}: its model calls do not go through "
        "tui-eval's HTTP client (pass http_client=tui_eval.http_client() to its SDK client); "
        "its usage is still priced",
        UserWarning,
        stacklevel=2,
    )
