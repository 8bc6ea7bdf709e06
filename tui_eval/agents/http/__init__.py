"""The layer every model call of a run goes through, over the ecosystem's HTTP stack.

tui-eval's own providers use it, and any SDK can through `tui_eval.http_client()`: the
OpenAI and Anthropic SDKs, pydantic-ai, LangChain, the OpenAI Agents SDK (the adapters
route a model's own client through it where the framework lets them).

- `context.py`: the run's and the sample's context — which quotas' limiters, which cache,
  which connections, which sample's meter a request counts in (`current_sample()`).
- `client.py`: `http_client()` / `http_client_sync()`, plain httpx2 clients over the layer
  (over a client of the user's own with `send_with=`).
- `transport.py`: the layer, a chain of httpx2 transports, one concern each: the response
  cache, the shared rate limiter, retries, the meter, and the wire (headers checked before
  it, the deadline, framing, the size cap).
- `limits.py` (with `rate_headers.py`): the shared rate limiter of an API quota.
- `cache.py`: the tenant-safe response cache. `metering.py`: usage, priced by genai-prices.
- `options.py`: `ProviderOptions`, how requests to an API are made (deadline, retries, limits).
- `sockets.py`: the sockets under it all — aiohttp's on asyncio, httpx2's own under trio.
  No HTTP protocol code is tui-eval's own.
"""
