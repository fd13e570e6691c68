"""What the news web collector may fetch, and how much of it: the web is untrusted input.

A feed or sitemap is written by someone else, so the links in it are too. A link is
followed only when it is on the same origin (scheme, host and port) as the configured
source it was found through, or when its host resolves to public addresses only
(:func:`is_public`: not loopback, private, link-local, shared, reserved or multicast), so a
feed cannot make the collector read a service on the machine or its network (another port
of 127.0.0.1, a cloud metadata address) and copy it into the corpus. The configured sources
themselves are the user's choice and may be anywhere.

The rule is checked twice. :func:`check_link` checks every URL before it is requested, after
every redirect too, and names the reason; :class:`GuardedBackend` checks again where the
connection is opened, resolving the host once and connecting to the address it checked, so a
name that resolves to a public address for the check and to 127.0.0.1 a moment later (DNS
rebinding) still reaches nothing private. Only the configured sources' hosts and ports may
connect to non-public addresses there.

Bodies are read streamed and cut at a byte cap on the *decoded* size (:func:`read_capped`);
gzip and deflate are inflated here with a bounded output per step (:class:`Inflater`, which
the OpenAI-compatible model backend uses too), because a decoder that inflates each network
read whole turns one 64 KiB read of a gzip bomb into 64 MiB; stacked codings are refused.

Proxies from the environment are not used: a proxy would open the connections, and the
address check would see only the proxy.
"""

from __future__ import annotations

import ipaddress
import socket
import time
import zlib
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

#: redirects followed per request (browsers allow about 20; news sites use one or two)
MAX_REDIRECTS = 10
#: the encodings the collector asks for and inflates itself (see the module docstring)
ACCEPT_ENCODING = "gzip, deflate"
#: response headers that describe the body's wire form, not the decoded body kept
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class Refused(Exception):
    """A URL or body the collector will not take; ``reason`` is the report's skip reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


Origin = tuple[str, str, int]


def origin(url: httpx.URL | str) -> Origin:
    """(scheme, host, port) with the scheme's default port filled in; the host as it goes
    on the wire (IDNA-encoded), as the connection sees it."""
    url = httpx.URL(url)
    port = url.port or {"http": 80, "https": 443}.get(url.scheme, 0)
    return url.scheme, url.raw_host.decode("ascii").lower(), port


def is_public(address: str) -> bool:
    """Whether an IP address is on the public internet: globally routable and not multicast
    (``is_global`` counts multicast as global); an IPv4-mapped IPv6 address is judged by its
    IPv4 address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 scope id is not part of it
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def public_addresses(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to, all of them public, or ``Refused``. One private
    address among them refuses the host: which one a connection would use is not ours to
    choose. A name that does not resolve is a network error (``httpx.ConnectError``)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise httpx.ConnectError(f"cannot resolve {host}: {exc}") from exc
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    private = [a for a in addresses if not is_public(a)]
    if private or not addresses:
        raise Refused(
            "private_address",
            f"{host} resolves to a non-public address ({', '.join(private) or 'none'})",
        )
    return addresses


def check_link(url: httpx.URL, source: Origin) -> None:
    """``Refused`` unless ``url`` is on the ``source`` origin or on public addresses only."""
    if url.scheme not in ("http", "https"):
        raise Refused("bad_url", f"{url.scheme}: is not http(s)")
    if (target := origin(url)) != source:
        public_addresses(target[1], target[2])


class GuardedBackend(httpcore.SyncBackend):
    """httpcore's network backend, connecting only to public addresses it resolved itself,
    except for the hosts and ports of ``trusted`` (the configured sources)."""

    def __init__(self, trusted: Iterable[Origin]) -> None:
        self._trusted = {(host, port) for _, host, port in trusted}

    def connect_tcp(
        self, host: str, port: int, *args: Any, **kwargs: Any
    ) -> httpcore.NetworkStream:
        if (host.lower(), port) in self._trusted:
            return super().connect_tcp(host, port, *args, **kwargs)
        last: Exception | None = None
        for address in public_addresses(host, port):  # the checked address is the one used
            try:
                return super().connect_tcp(address, port, *args, **kwargs)
            except httpcore.ConnectError as exc:
                last = exc
        raise last or httpcore.ConnectError(f"cannot connect to {host}")


def guarded_transport(trusted: Iterable[Origin]) -> httpx.HTTPTransport:
    """An httpx transport whose connections go through :class:`GuardedBackend`."""
    transport = httpx.HTTPTransport(trust_env=False)  # no proxy (module docstring)
    # httpx takes no network backend; its pool is httpcore's, which does (public API).
    # SSL_CERT_FILE / SSL_CERT_DIR still apply: they choose whom to trust, not where to go
    transport._pool = httpcore.ConnectionPool(  # noqa: SLF001
        ssl_context=httpx.create_ssl_context(),
        network_backend=GuardedBackend(trusted),
    )
    return transport


class Inflater:
    """A body's ``Content-Encoding`` undone step by step, never past ``limit`` decoded bytes
    (``Refused("too_large")`` once it would be). One gzip or deflate layer at most: each
    stacked layer multiplies the size again (``gzip, gzip``: 3,477 bytes became 4.4 GB
    through httpx's decoder), and no server needs two, so a header naming more than one
    coding, or one not asked for (:data:`ACCEPT_ENCODING`), is ``Refused("bad_encoding")``
    before any byte is read."""

    def __init__(self, content_encoding: str, limit: int) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",")]
        codings = [c for c in codings if c not in ("", "identity")]
        if len(codings) > 1:
            raise Refused(
                "bad_encoding",
                f"Content-Encoding {content_encoding!r}: more than one coding refused "
                "(each can multiply the body's size)",
            )
        if codings and codings[0] not in ("gzip", "x-gzip", "deflate"):
            raise Refused("bad_encoding", f"Content-Encoding {codings[0]!r} was not asked for")
        self._coding = codings[0] if codings else None
        # gzip or zlib header, detected
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 32) if codings else None
        self.limit = limit
        self.body = bytearray()

    def feed(self, chunk: bytes) -> None:
        """Decode ``chunk`` (raw bytes off the wire) into :attr:`body`."""
        while chunk:
            room = self.limit + 1 - len(self.body)
            if self._inflate is None:
                self.body += chunk[:room]
                chunk = b""
            else:
                try:
                    self.body += self._inflate.decompress(chunk, room)
                except zlib.error as exc:
                    raise Refused("malformed", f"bad {self._coding} data: {exc}") from exc
                chunk = b"" if self._inflate.eof else self._inflate.unconsumed_tail
            if len(self.body) > self.limit:
                raise Refused("too_large", f"more than {self.limit} bytes once decoded")


def read_capped(response: httpx.Response, limit: int, deadline: float) -> bytes:
    """The decoded body of a streamed response (:class:`Inflater`), or ``Refused`` as soon
    as it passes ``limit`` bytes; ``httpx.ReadTimeout`` past ``deadline``
    (``time.monotonic()``), so a server sending a byte at a time cannot hold a request
    either."""
    inflater = Inflater(response.headers.get("content-encoding", "identity"), limit)
    for chunk in response.iter_raw():
        inflater.feed(chunk)
        if time.monotonic() > deadline:
            raise httpx.ReadTimeout("no complete answer within timeout_s")
    return bytes(inflater.body)


def inflate_gzip_file(body: bytes, limit: int) -> bytes:
    """A body that is itself a gzip file (``sitemap.xml.gz``), inflated within ``limit``."""
    if not body.startswith(b"\x1f\x8b"):
        return body
    inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
    try:
        out = inflate.decompress(body, limit + 1)
    except zlib.error as exc:
        raise Refused("malformed", f"bad gzip file: {exc}") from exc
    if len(out) > limit:
        raise Refused("too_large", f"more than {limit} bytes once decoded")
    return out


def decoded(response: httpx.Response, content: bytes) -> httpx.Response:
    """A complete response holding ``content``, the body already decoded."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _WIRE_HEADERS]
    return httpx.Response(
        response.status_code, headers=headers, content=content, request=response.request
    )
