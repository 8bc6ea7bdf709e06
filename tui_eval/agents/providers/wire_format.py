"""HTTP/1.1 as `connections.py` writes and reads it: a request's header lines, and the
response head (status line and header fields), read with the leniency RFC 9112 allows a
client and nothing more, and whether a TLS stream ended as TLS ends one.

Accepted as h11 accepted them: a bare LF as line end (RFC 9112, 2.2), folded header lines
(obs-fold, joined with a space: 5.2) and a `Content-Length` repeated with the same value
(`2, 2`: 6.3). Refused at once, not left to wait for a timeout: a status under 100, a
`Transfer-Encoding` whose last coding is not `chunked`, a bare CR, a Content-Length that is
not a number or two different ones.
"""

from __future__ import annotations

import re
import ssl

from tui_eval.agents.providers.proxies import Headers
from tui_eval.agents.providers.wire_errors import TransportError

HEAD_END = re.compile(rb"\n\r?\n")
"""Where a response head ends: the first empty line, CRLF or bare LF."""
TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_MAX_LENGTH_DIGITS = 18
"""A Content-Length with more digits (an exabyte) is refused before `int()` reads it."""

Head = tuple[int, Headers, int | None, bool, bool]
"""Status, headers, Content-Length, whether the body is chunked, whether the connection
can be kept open."""


def parse_head(head: bytes, unusual: bool = False) -> Head:
    """Parse `head` (without the empty line that ends it); `unusual` when it has folded lines.

    Raises:
        TransportError: the head is not an HTTP/1.1 response, naming the line at fault.
    """
    lines = head.split(b"\r\n")
    if unusual or head.count(b"\n") != len(lines) - 1 or head.count(b"\r") != len(lines) - 1:
        lines = _unusual_lines(head)  # bare LF, obs-fold or a stray CR: the slow path
    version, _, rest = lines[0].partition(b" ")
    code = rest[:3]
    if (
        version not in (b"HTTP/1.1", b"HTTP/1.0")
        or len(code) != 3
        or not code.isdigit()
        or rest[3:4] not in (b"", b" ")
    ):
        raise TransportError(f"not an HTTP/1.1 response: {lines[0][:100]!r}")
    status = int(code)
    keep_alive = version == b"HTTP/1.1"
    length: int | None = None
    coding = b""
    headers: Headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not TOKEN.fullmatch(name):
            if line[:1] in (b" ", b"\t") and not unusual:  # obs-fold: the slow path
                return parse_head(head, unusual=True)
            raise TransportError(f"malformed response header line {line[:100]!r}")
        value = value.strip(b" \t")
        headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length":
            if value.isdigit() and len(value) <= _MAX_LENGTH_DIGITS and length is None:
                length = int(value)
            else:
                length = _repeated_length(value, length)
        elif lower == b"transfer-encoding":
            coding = value.lower().rsplit(b",", 1)[-1].strip(b" \t")
        elif lower == b"connection":
            tokens = {token.strip(b" \t") for token in value.lower().split(b",")}
            if b"close" in tokens:
                keep_alive = False
            elif b"keep-alive" in tokens:
                keep_alive = True
    if not coding:
        return status, headers, length, False, keep_alive
    if coding != b"chunked":  # the body's end could only be guessed (h11 refused it too)
        raise TransportError(f"unsupported Transfer-Encoding {coding[:40]!r} (not chunked)")
    if length is not None:  # both framings: chunked wins (RFC 9112, 6.3), and the
        keep_alive = False  # connection is not trusted with another request
    return status, headers, None, True, keep_alive


def _repeated_length(value: bytes, earlier: int | None) -> int:
    """A Content-Length given as a list (`2, 2`) or again: allowed only when every value is
    the same number."""
    numbers = {earlier} if earlier is not None else set()
    for part in value.split(b","):
        part = part.strip(b" \t")
        if not part.isdigit() or len(part) > _MAX_LENGTH_DIGITS:
            raise TransportError(f"malformed Content-Length {value[:40]!r}")
        numbers.add(int(part))
    if len(numbers) != 1:
        raise TransportError(f"conflicting Content-Length values {value[:40]!r}")
    return numbers.pop()


def _unusual_lines(head: bytes) -> list[bytes]:
    """The lines of a head that uses bare LF line ends or folded header lines; a CR anywhere
    but before an LF is refused."""
    lines: list[bytes] = []
    for line in head.split(b"\n"):
        line = line.removesuffix(b"\r")
        if b"\r" in line:
            raise TransportError(f"a bare CR in the response head line {line[:100]!r}")
        if line[:1] in (b" ", b"\t") and len(lines) > 1:  # obs-fold: continues the field
            lines[-1] = lines[-1].rstrip(b" \t") + b" " + line.strip(b" \t")
        else:
            lines.append(line)
    return lines


def header_map(headers: Headers) -> dict[str, str]:
    """Response headers as a dict with lower-case names."""
    return {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in headers}


def header_block(headers: Headers) -> bytes:
    """`Name: value` lines for `headers`, refusing what would break the request's framing."""
    lines = []
    for name, value in headers:
        if not TOKEN.fullmatch(name):
            raise ValueError(f"header name {name!r} is not a valid HTTP header name")
        if b"\r" in value or b"\n" in value or b"\0" in value:
            raise ValueError(f"the value of header {name.decode()!r} contains a line break")
        lines.append(b"%s: %s\r\n" % (name, value))
    return b"".join(lines)


def without_close_notify(tls: ssl.SSLObject | None) -> bool:
    """Whether a TLS stream that just ended did so without close_notify: a TCP close an
    attacker on the path can forge. After close_notify a read gives b"" (or says so)."""
    if tls is None:
        return False  # plain TCP
    try:
        return tls.read(1) != b""
    except ssl.SSLZeroReturnError:
        return False
    except (ssl.SSLError, ValueError):  # want-read: no close_notify came
        return True
