"""Where a request goes on its way to the API: proxies from the environment, and which
certificate authorities HTTPS trusts."""

from __future__ import annotations

import base64
import ipaddress
import ssl
import urllib.request
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

Headers = list[tuple[bytes, bytes]]


class Origin(NamedTuple):
    """Scheme, host and port of a server: what a connection is opened to."""

    scheme: bytes
    host: bytes
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        """The origin of `url` (its port from the scheme when the URL names none)."""
        parts = urlsplit(url)
        scheme = parts.scheme.encode()
        port = parts.port or (443 if scheme == b"https" else 80)
        return cls(scheme, (parts.hostname or "").encode(), port)

    def authority(self) -> str:
        """`host:port`, an IPv6 host in brackets (`[::1]:8443`), as CONNECT and errors say it."""
        host = self.host.decode()
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"


def ssl_context() -> ssl.SSLContext:
    """How HTTPS servers are verified: `SSL_CERT_FILE` (or `SSL_CERT_DIR`) when set, else the
    system's trust store, so a CA that IT installed on the machine is trusted.

    This is httpcore2's `default_ssl_context`: `truststore` (the OS's own verifier) on
    macOS and Windows; on Linux the system's CA bundle, found where OpenSSL was built to
    look or at the distributions' usual paths (what `truststore` reads on Linux, without
    its per-handshake reload, which older OpenSSL versions accumulate).
    """
    import httpcore2  # only HTTPS needs it; plain-HTTP runs never pay its import

    return httpcore2.default_ssl_context()


class Proxy:
    """An HTTP(S) proxy: plain `http://` requests are forwarded, `https://` ones tunnelled
    through `CONNECT` (the proxy never sees the API key or the body).

    Args:
        url: the proxy's URL, `http://[user:password@]host:port` (or `https://...`).
    """

    def __init__(self, url: str) -> None:
        if "://" not in url:
            url = f"http://{url}"  # HTTPS_PROXY=proxy.corp:3128, as curl accepts it
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"proxy {_without_userinfo(url)!r} is not supported: tui-eval speaks to "
                "http:// and https:// proxies (not SOCKS)"
            )
        self.url = _without_userinfo(url)
        self.origin = Origin.of(url)
        self.headers: Headers = []
        """What every request to the proxy carries (its credentials, if the URL has any)."""
        if parts.username is not None:
            user = unquote(parts.username)
            password = unquote(parts.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            self.headers.append((b"Proxy-Authorization", f"Basic {token}".encode()))
        self.ssl = ssl_context() if self.origin.scheme == b"https" else None
        """How the proxy itself is verified, for an `https://` proxy; else None."""

    def __repr__(self) -> str:
        return f"Proxy({self.url!r})"


def proxy_for(url: str) -> Proxy | None:
    """The proxy the environment names for `url`, as curl and the requests library read it:
    `https_proxy`/`HTTPS_PROXY` for https URLs, `http_proxy`/`HTTP_PROXY` for http ones,
    `all_proxy`/`ALL_PROXY` for both; `no_proxy`/`NO_PROXY` bypasses it (`_bypassed`).
    Lower-case names win.

    Raises:
        ValueError: the variable names a proxy tui-eval cannot use (SOCKS), naming it.
    """
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    chosen = proxies.get(parts.scheme) or proxies.get("all")
    if not chosen:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if _bypassed((parts.hostname or "").rstrip("."), port, proxies.get("no", "")):
        return None
    return Proxy(chosen)


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    """Whether `no_proxy` names `host` (lower case, no brackets) on `port`, as curl and the
    requests library read it: entries split by commas or spaces; `*` for every host; a name
    for itself and its subdomains (`.example.com`, `*.example.com` and `example.com.` alike);
    `host:port` or `[v6]:port` for that port only; an IP address or CIDR range
    (`10.0.0.0/8`, `fd00::/8`) for the IP literals in it."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in no_proxy.lower().replace(",", " ").split():
        if entry == "*":
            return True
        name, colon, entry_port = entry.rpartition(":")
        if not colon or (name.count(":") and not name.endswith("]")):
            name, entry_port = entry, ""  # no port: a name, or an IPv6 address without []
        if entry_port and entry_port != str(port):
            continue
        name = name.strip("[]").rstrip(".").removeprefix("*").removeprefix(".")
        if address is None:
            if name and (host == name or host.endswith(f".{name}")):
                return True
            continue
        try:
            if address in ipaddress.ip_network(name, strict=False):
                return True
        except ValueError:
            continue  # a name: it never matches an IP literal
    return False


def _without_userinfo(url: str) -> str:
    """`url` with its credentials (`user:password@`, or a bare token as the user) as `***@`."""
    parts = urlsplit(url)
    _, at, host = parts.netloc.rpartition("@")
    if not at:
        return url
    return parts._replace(netloc=f"***@{host}").geturl()
