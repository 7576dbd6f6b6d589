"""Who may open a session: the Origin rule, the access token, and a refusal log that cannot be flooded.

**Origin.** A browser always sends ``Origin`` with a WebSocket upgrade, and a
page of another site must not reach a local server's microphone endpoint.
Comparing the Origin with the request's ``Host`` header is not enough: both
come from the client, and a DNS-rebinding page (``evil.example`` resolving
to the server's address) sends ``Host: evil.example:8765`` and ``Origin:
http://evil.example:8765``, which match. So the Origin is compared with what
the server itself is: the address the connection arrived on (an IP literal
cannot be rebound), ``localhost`` when that address is a loopback one (a
browser resolves ``localhost`` itself), the host's own names, and
an explicit allow-list. A request without ``Origin`` is not from a browser
page and passes (the token guards those off loopback).

**Token.** Off loopback a server needs a secret: ``?token=`` in the page's
URL (the page passes it on to its WebSocket) or an ``Authorization: Bearer``
header, compared in constant time.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import ipaddress
import logging
import secrets
import socket
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

__all__ = ["RefusalLog", "new_token", "origin_allowed", "own_authorities", "token_matches"]


def _authority(host: str, port: int) -> str:
    host = host.split("%", 1)[0]  # an IPv6 zone never appears in an Origin
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _normalize(origin: str) -> str | None:
    """``scheme://host[:port]`` → ``host:port`` (lower case, default ports filled in); None when unreadable."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if not host or parts.scheme not in ("http", "https"):
        return None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return _authority(host.lower(), port)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


@functools.cache
def _machine_names() -> tuple[str, ...]:
    """The host's own names (looked up once: ``getfqdn`` may ask a resolver)."""
    names = {socket.gethostname().lower()}
    with contextlib.suppress(OSError):
        names.add(socket.getfqdn().lower())
    return tuple(n for n in names if n and n != "localhost")


def own_authorities(local_host: str, port: int, *, names: Iterable[str] | None = None) -> frozenset[str]:
    """The ``host:port`` forms a page served by this server has as its origin, for a connection on ``local_host``.

    ``local_host`` is the address the connection arrived on (the socket's own
    address, never a header). Loopback adds ``localhost``; ``names`` (default:
    the host's own names) are added as well.
    """
    own = {_authority(local_host.lower(), port)}
    if _is_loopback(local_host):
        own |= {_authority("localhost", port), _authority("127.0.0.1", port), _authority("::1", port)}
    for name in _machine_names() if names is None else names:
        own.add(_authority(name.lower(), port))
    return frozenset(own)


def origin_allowed(origin: str | None, own: str | Iterable[str] | None, allowed: Iterable[str] = ()) -> bool:
    """Whether a WebSocket upgrade from ``origin`` may go on: none (not a browser), this server's own, or listed.

    Args:
        origin: The request's ``Origin`` header.
        own: This server's ``host:port`` authorities (:func:`own_authorities`), or one of them.
        allowed: Other origins allowed in (``"https://app.example"``).
    """
    if origin is None:
        return True
    bare = _normalize(origin)
    if bare is None:
        return False
    if any(_normalize(a) == bare for a in allowed):
        return True
    if own is None:
        return False
    mine = {own} if isinstance(own, str) else set(own)
    return bare in {m.lower() for m in mine}


def new_token() -> str:
    """A fresh access token (128 random bits, URL-safe)."""
    return secrets.token_urlsafe(16)


def token_matches(expected: str | None, query_token: str | None, authorization: str | None) -> bool:
    """Whether the request carries ``expected`` (no token expected: always), compared in constant time."""
    if expected is None:
        return True
    given = query_token
    if given is None and authorization is not None and authorization.lower().startswith("bearer "):
        given = authorization[7:].strip()
    if given is None:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


class RefusalLog:
    """At most one WARNING per ``every`` seconds for refused requests; the others are counted into the next one.

    A client that opens connections in a loop from a foreign page must not be
    able to fill the log (or slow the server writing it).

    Args:
        log: Where to write.
        clock: Seconds (the event loop's ``time``).
        every: Seconds between two warnings.
    """

    def __init__(self, log: logging.Logger, clock: Callable[[], float], every: float = 10.0) -> None:
        self.log = log
        self.clock = clock
        self.every = every
        self._last: float | None = None
        self.suppressed = 0
        self.refused = 0

    def refused_request(self, message: str, *args: object) -> None:
        """Count a refusal; write it when the last warning is ``every`` seconds old."""
        self.refused += 1
        now = self.clock()
        if self._last is not None and now - self._last < self.every:
            self.suppressed += 1
            return
        if self.suppressed:
            message += " (and %d more refused in the last %.0f s)"
            args = (*args, self.suppressed, now - self._last if self._last is not None else 0.0)
        self._last = now
        self.suppressed = 0
        self.log.warning(message, *args)
