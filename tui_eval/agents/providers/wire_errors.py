"""How an HTTP exchange with an API fails below the provider: the errors both connection
stacks (asyncio's in `connections.py`, trio's in `trio_connections.py`) raise."""

from __future__ import annotations


class ResponseTooLarge(Exception):
    """A response body went past the limit; the connection was dropped."""


class TransportError(Exception):
    """The connection failed, or the server's answer was not HTTP/1.1 (the message says which)."""
