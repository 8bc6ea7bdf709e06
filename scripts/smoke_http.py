"""Smoke test of an installed tui-eval: real HTTP to an OpenAI-compatible and an Anthropic
API on 127.0.0.1 — directly, through proxies, over TLS with a test CA.

    python scripts/smoke_http.py                  # asyncio (aiohttp's sockets)
    python scripts/smoke_http.py --backend trio   # after `pip install trio` (httpx2's)

Needs nothing but the package as `pip install tui-eval` installs it (no extras, no test
dependencies) and the `openssl` command. It starts loopback servers (`smoke_servers.py`):
an API answering both wire formats over HTTP and over HTTPS (a certificate signed by a
CA made for the run), a forwarding HTTP proxy, and a `CONNECT` proxy that requires basic
credentials. Each scenario runs a client — this script with `--client` — in its own
process with its own environment (proxy variables are read when a client is made), which
sends one request through each built-in provider and runs one small `evaluate` per
provider. The servers count what reached them and the scenario checks the counts:

- direct: every request reached the HTTP API, with the key; no proxy saw any.
- HTTP proxy (`HTTP_PROXY`): every request went through the proxy (absolute URI) and
  reached the API forwarded by it.
- CONNECT proxy with credentials (`HTTPS_PROXY=http://user:password@…`, `SSL_CERT_FILE`
  = the test CA): the proxy saw only `CONNECT`s to the HTTPS API, each with the
  credentials; every request reached the HTTPS API, inside the tunnel.
- CONNECT proxy, wrong password: each provider fails with the proxy's 407, nothing reached
  the API.
- CA not trusted (no `SSL_CERT_FILE`): each provider fails on the certificate, nothing
  reached the API — the CONNECT scenario passed because of `SSL_CERT_FILE`.
- NO_PROXY (`NO_PROXY=127.0.0.1` beside both proxy variables): both APIs reached
  directly, neither proxy saw a request.

No API key, proxy password or encoded credential may appear in any client's output or
error. It prints one line per scenario and `smoke: ok`, or exits non-zero with what
failed. `.ci/run` runs it in a fresh virtualenv, under asyncio and then under trio (the
test suite does not run it again: `tests/test_layering.py` checks, in its fresh process,
that the library imports and runs with trio unimportable).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from smoke_servers import (  # beside this script: its folder is first on sys.path
    KEY,
    VIA,
    ApiServer,
    ProxyServer,
    basic_credentials,
    make_authority,
)

BACKENDS = ("asyncio", "trio")
PROXY_USER = "smoke-user"
PROXY_PASSWORD = "smoke-proxy-pw-7f3a9c"
WRONG_PASSWORD = "smoke-wrong-pw-d41e08"
SECRETS = {
    "the API key": KEY,
    "the proxy password": PROXY_PASSWORD,
    "the proxy credentials, encoded": basic_credentials(PROXY_USER, PROXY_PASSWORD),
    "the wrong proxy password": WRONG_PASSWORD,
    "the wrong proxy credentials, encoded": basic_credentials(PROXY_USER, WRONG_PASSWORD),
}
CASES = 4
REQUESTS_PER_API = 2 * (1 + CASES)
"""Each provider (OpenAI-compatible, Anthropic): one request, then a run of CASES cases."""
CLIENT_TIMEOUT_S = 120.0
"""A stuck guard for one client process (each takes about a second)."""


class ScenarioFailed(Exception):
    """A scenario's check did not hold (the message never holds a secret)."""


def redacted(text: str) -> str:
    """`text` with every secret of the smoke replaced by `***`."""
    for secret in SECRETS.values():
        text = text.replace(secret, "***")
    return text


def expect(condition: bool, what: str) -> None:
    """Fail the scenario with `what` unless `condition` holds."""
    if not condition:
        raise ScenarioFailed(what)


def clean_environment(home: Path) -> dict[str, str]:
    """This process's environment without proxy or trust-store variables (the servers are
    on this machine), with tui-eval's state in the run's temporary folder."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.lower().endswith("_proxy") and name not in ("SSL_CERT_FILE", "SSL_CERT_DIR")
    }
    return {**kept, "TUI_EVAL_HOME": str(home)}


@dataclass
class World:
    """The loopback servers, the test CA, and how to run a client among them."""

    backend: str
    api: ApiServer
    tls_api: ApiServer
    forward: ProxyServer
    tunnel: ProxyServer
    ca_file: Path
    home: Path
    outputs: list[str] = field(default_factory=list)

    @property
    def servers(self) -> list[ApiServer | ProxyServer]:
        return [self.api, self.tls_api, self.forward, self.tunnel]

    def tunnel_url(self, password: str = PROXY_PASSWORD) -> str:
        return f"http://{PROXY_USER}:{password}@127.0.0.1:{self.tunnel.port}"

    def client(self, env: dict[str, str], *bases: str, fails: bool = False) -> str:
        """Run a client process with `env` added against each API base; its output.

        Raises:
            ScenarioFailed: it exited non-zero, or a secret appeared in what it wrote.
        """
        command = [sys.executable, __file__, "--client", "--backend", self.backend]
        command += ["--fails"] if fails else []
        done = subprocess.run(
            [*command, *bases],
            env={**clean_environment(self.home), **env},
            capture_output=True,
            text=True,
            timeout=CLIENT_TIMEOUT_S,
        )
        written = done.stdout + done.stderr
        leaked = [name for name, secret in SECRETS.items() if secret in written]
        expect(not leaked, f"{' and '.join(leaked)} appeared in the client's output")
        expect(done.returncode == 0, f"the client exited {done.returncode}:\n{written.strip()}")
        return done.stdout

    def quiet_proxies(self) -> None:
        for name, proxy in (("HTTP", self.forward), ("CONNECT", self.tunnel)):
            seen = proxy.take()
            expect(not seen, f"the {name} proxy was sent {seen}")

    def reached(self, api: ApiServer, via: str | None = None) -> None:
        hits = api.take()
        expect(
            len(hits) == REQUESTS_PER_API,
            f"{api.url} was sent {len(hits)} requests, not {REQUESTS_PER_API}: {hits}",
        )
        expect(all(hit.authorized for hit in hits), f"{api.url} was sent requests without the key")
        expect(all(hit.via == via for hit in hits), f"{api.url}: Via {[h.via for h in hits]}")

    def refused(self, output: str, reason: str) -> None:
        lines = [line for line in output.splitlines() if " refused: " in line]
        expect(len(lines) == 2, f"two refusals expected, the client wrote:\n{output}")
        expect(all(reason in line.lower() for line in lines), f"no {reason!r} in:\n{output}")
        self.outputs.extend(lines)


def direct(world: World) -> str:
    world.client({}, world.api.url)
    world.reached(world.api)
    world.quiet_proxies()
    return f"{REQUESTS_PER_API} requests straight to {world.api.url}"


def http_proxy(world: World) -> str:
    world.client({"HTTP_PROXY": world.forward.url}, world.api.url)
    seen = world.forward.take()
    expect(
        [hit.target.split("/v1/")[0] for hit in seen] == [world.api.url] * REQUESTS_PER_API,
        f"the proxy was sent {seen}",
    )
    world.reached(world.api, via=VIA)
    world.quiet_proxies()
    return f"{len(seen)} requests forwarded by {world.forward.url}"


def connect_proxy(world: World) -> str:
    env = {"HTTPS_PROXY": world.tunnel_url(), "SSL_CERT_FILE": str(world.ca_file)}
    world.client(env, world.tls_api.url)
    seen = world.tunnel.take()
    authority = f"127.0.0.1:{world.tls_api.port}"
    credentials = basic_credentials(PROXY_USER, PROXY_PASSWORD)
    expect(bool(seen), "the CONNECT proxy was sent nothing")
    expect(
        all(hit.method == "CONNECT" and hit.target == authority for hit in seen),
        f"the CONNECT proxy was sent {[(hit.method, hit.target) for hit in seen]}",
    )
    expect(
        all(hit.proxy_authorization == credentials for hit in seen),
        "a CONNECT came without the credentials from HTTPS_PROXY",
    )
    world.reached(world.tls_api)
    world.quiet_proxies()
    return (
        f"{REQUESTS_PER_API} requests in {len(seen)} authenticated tunnel(s) to "
        f"{world.tls_api.url}, trusted through SSL_CERT_FILE"
    )


def connect_proxy_wrong_password(world: World) -> str:
    env = {"HTTPS_PROXY": world.tunnel_url(WRONG_PASSWORD), "SSL_CERT_FILE": str(world.ca_file)}
    world.refused(world.client(env, world.tls_api.url, fails=True), "407")
    seen = world.tunnel.take()
    expect(bool(seen), "the CONNECT proxy was sent nothing")
    expect(not world.tls_api.take(), "a request reached the API past the proxy's 407")
    world.quiet_proxies()
    return f"both providers failed with the proxy's 407 after {len(seen)} CONNECT(s)"


def untrusted_ca(world: World) -> str:
    world.refused(world.client({}, world.tls_api.url, fails=True), "certificate")
    expect(not world.tls_api.take(), "a request reached the API over an untrusted TLS")
    world.quiet_proxies()
    return "without SSL_CERT_FILE both providers refused the test CA's certificate"


def no_proxy(world: World) -> str:
    env = {
        "HTTP_PROXY": world.forward.url,
        "HTTPS_PROXY": world.tunnel_url(),
        "NO_PROXY": "127.0.0.1",
        "SSL_CERT_FILE": str(world.ca_file),
    }
    world.client(env, world.api.url, world.tls_api.url)
    world.quiet_proxies()
    world.reached(world.api)
    world.reached(world.tls_api)
    return f"{2 * REQUESTS_PER_API} requests to both APIs, none to either proxy"


SCENARIOS: dict[str, Callable[[World], str]] = {
    "direct": direct,
    "HTTP proxy": http_proxy,
    "CONNECT proxy with credentials": connect_proxy,
    "CONNECT proxy, wrong password": connect_proxy_wrong_password,
    "CA not trusted": untrusted_ca,
    "NO_PROXY": no_proxy,
}


def run_scenarios(backend: str, verbose: bool) -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tui-eval-smoke-") as folder:
        authority = make_authority(Path(folder))
        with (
            ApiServer() as api,
            ApiServer(authority.server_context) as tls_api,
            ProxyServer() as forward,
            ProxyServer(credentials=(PROXY_USER, PROXY_PASSWORD)) as tunnel,
        ):
            world = World(backend, api, tls_api, forward, tunnel, authority.ca_file, Path(folder))
            for name, scenario in SCENARIOS.items():
                began = time.monotonic()
                for server in world.servers:
                    server.errors.clear()
                try:
                    summary = scenario(world)
                except ScenarioFailed as exc:
                    failure = f"smoke: [{backend}] {name}: FAILED: {exc}"
                    for server in world.servers:
                        failure += "".join(f"\n  {server.url}: {e}" for e in server.errors)
                    raise SystemExit(redacted(failure)) from None
                print(
                    f"smoke: [{backend}] {name}: ok, {summary} ({time.monotonic() - began:.1f} s)"
                )
                if verbose:
                    for line in world.outputs:
                        print(f"    {line}")
                world.outputs.clear()
    spec = importlib.util.find_spec("tui_eval")
    print(
        f"smoke: ok ({backend}, {len(SCENARIOS)} scenarios in {time.monotonic() - started:.1f} s; "
        f"{spec.origin if spec else '?'}, Python {sys.version.split()[0]})"
    )


async def client(bases: list[str], fails: bool) -> None:
    """One request through each built-in provider and one small run each, against every
    base; with `fails`, one request each that must fail (its error printed)."""
    from tui_eval import Agent, Case, equals, evaluate
    from tui_eval.agents.messages import Message
    from tui_eval.agents.providers import ProviderError, resolve_model
    from tui_eval.agents.providers.anthropic import AnthropicProvider

    os.environ["OPENAI_API_KEY"] = KEY
    # An expected failure is not retried: the scenario stays quick.
    query, retries = ("?max_retries=0", {"max_retries": 0}) if fails else ("", {})
    for base in bases:
        providers = {
            "openai-compatible": resolve_model(f"openai-compatible:smoke-model@{base}/v1{query}"),
            "anthropic": AnthropicProvider("claude-smoke", base_url=base, api_key=KEY, **retries),
        }
        for name, provider in providers.items():
            if fails:
                try:
                    completion = await provider.complete([Message("user", "question 1")], [])
                except ProviderError as exc:
                    print(f"{name} refused: {exc}")
                    continue
                raise SystemExit(
                    f"{name} at {base} answered {completion.content!r}: expected an error"
                )
            completion = await provider.complete([Message("user", "question 1")], [])
            if completion.content != "answer 1":
                raise SystemExit(f"{name} at {base} answered {completion.content!r}")
            cases = [Case(f"question {i}", checks=[equals(f"answer {i}")]) for i in range(CASES)]
            report = await evaluate(Agent(provider), cases, concurrency=2)
            if not report.passed:
                raise SystemExit(f"{name} at {base}: the run failed:\n{report.header()}")
            print(f"{name} at {base}: ok ({report.header().splitlines()[0]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=BACKENDS, default="asyncio")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the expected errors")
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fails", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("bases", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        import anyio

        anyio.run(client, args.bases, args.fails, backend=args.backend)
        return
    if args.backend == "trio" and importlib.util.find_spec("trio") is None:
        raise SystemExit("smoke: --backend trio needs trio (pip install trio)")
    run_scenarios(args.backend, args.verbose)


if __name__ == "__main__":
    main()
