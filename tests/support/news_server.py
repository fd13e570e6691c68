"""A local news site for the news-collection tests.

``NewsServer`` listens on 127.0.0.1 on an ephemeral port in a background thread and serves
an RSS feed (``/rss.xml``), an Atom feed (``/atom.xml``), a news sitemap
(``/sitemap.xml``), six article pages, a page under ``/private/`` that robots.txt forbids,
a malformed page (truncated HTML), a binary page, a 404, a page that answers 500 once and
then 200 (``/news/flaky``) and one article served under two URLs (``/news/a2`` and
``/mirror/a2-copy``). It records every request's path and ``time.monotonic()`` so tests
can check robots compliance and rate limiting. It is bounded: at most ``max_recorded``
requests are kept and it stops itself after ``lifetime_s`` if nobody stopped it.

``Site`` serves fixed pages (any status, headers and bytes: redirects, a gzip bomb) for the
tests of what the collector refuses (tests/curation/test_news_web_guard.py); ``rss(...)``
builds a feed listing given links.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROBOTS = "User-agent: *\nDisallow: /private/\n"

#: slug -> (headline, date, section, first sentence)
ARTICLES = {
    "a1": (
        "Council approves river flood defences",
        "2023-01-10",
        "Politics",
        "The city council on Monday approved a new flood defence scheme for the river.",
    ),
    "a2": (
        "Rail strike halts northern commuter lines",
        "2023-02-14",
        "Business",
        "Commuters across the north faced cancellations as rail staff walked out.",
    ),
    "a3": (
        "Scientists map deep-sea coral reef",
        "2023-03-02",
        "Science",
        "A team of marine biologists has mapped a coral reef two kilometres deep.",
    ),
    "a4": (
        "Heatwave warning issued for the weekend",
        "2023-03-20",
        "Weather",
        "Forecasters issued an amber heat warning covering most of the south.",
    ),
    "a5": (
        "Local team wins regional cup final",
        "2022-11-05",
        "Sport",
        "The home side won the regional cup final after a dramatic penalty shootout.",
    ),
    "a6": (
        "Museum reopens after two-year renovation",
        "2023-04-01",
        "Culture",
        "The city museum reopened its doors on Saturday after a long renovation.",
    ),
    "flaky": (
        "Budget talks resume after pause",
        "2023-02-01",
        "Politics",
        "Negotiators returned to the table on Wednesday to resume budget talks.",
    ),
    "secret": (
        "Leaked memo",
        "2023-02-02",
        "Politics",
        "This page sits under a path that robots.txt forbids.",
    ),
}

_FILLER = (
    "Officials said the decision followed months of consultation with residents and "
    "businesses. Several speakers at the public meeting raised concerns about the cost, "
    "while others welcomed the plan as overdue. A spokesperson said further details would "
    "be published in the coming weeks, and that a review would take place next year."
)


def article_html(slug: str) -> str:
    headline, day, section, lead = ARTICLES[slug]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{headline} | Fixture News</title>
<meta property="og:title" content="{headline}">
<meta property="article:published_time" content="{day}T09:30:00Z">
<meta property="article:section" content="{section}">
</head><body>
<nav><a href="/">Home</a> <a href="/politics">Politics</a></nav>
<article><h1>{headline}</h1>
<p>{lead}</p>
<p>{_FILLER}</p>
<p>Reporting by the fixture newsroom; story {slug}.</p>
</article>
<footer>Copyright Fixture News</footer>
</body></html>"""


def _rfc822(day: str) -> str:
    return time.strftime("%a, %d %b %Y 09:30:00 +0000", time.strptime(day, "%Y-%m-%d"))


def _rss(base: str) -> str:
    items = "".join(
        f"<item><title>{ARTICLES[s][0]}</title><link>{base}{path}</link>"
        f"<pubDate>{_rfc822(ARTICLES[s][1])}</pubDate><category>{ARTICLES[s][2]}</category></item>"
        for s, path in [
            ("a1", "/news/a1"),
            ("a2", "/news/a2"),
            ("a3", "/news/a3"),
            ("secret", "/private/secret"),
            ("flaky", "/news/flaky"),
        ]
    )
    extra = (
        f"<item><title>Broken page</title><link>{base}/news/broken</link></item>"
        f"<item><title>Binary page</title><link>{base}/news/binary</link></item>"
        f"<item><title>Gone</title><link>{base}/news/missing</link></item>"
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel>'
        f"<title>Fixture News</title>{items}{extra}</channel></rss>"
    )


def _atom(base: str) -> str:
    entries = "".join(
        f'<entry><title>{ARTICLES[s][0]}</title><link rel="alternate" href="{base}{path}"/>'
        f'<published>{ARTICLES[s][1]}T09:30:00Z</published><category term="{ARTICLES[s][2]}"/>'
        "</entry>"
        for s, path in [
            ("a4", "/news/a4"),
            ("a5", "/news/a5"),
            # the same article as the RSS a1, with tracking parameters and a fragment
            ("a1", "/news/a1?utm_source=atom&amp;utm_medium=feed#top"),
        ]
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        f'<feed xmlns="http://www.w3.org/2005/Atom"><title>Fixture</title>{entries}</feed>'
    )


def _sitemap(base: str) -> str:
    urls = "".join(
        f"<url><loc>{base}{path}</loc><news:news><news:publication>"
        "<news:name>Fixture News</news:name><news:language>en</news:language>"
        f"</news:publication><news:publication_date>{day}</news:publication_date>"
        f"<news:title>{title}</news:title></news:news></url>"
        for path, title, day in [
            ("/news/a6", ARTICLES["a6"][0], ARTICLES["a6"][1]),
            # a2's content under another URL: only the content hash can catch it
            ("/mirror/a2-copy", ARTICLES["a2"][0], ARTICLES["a2"][1]),
        ]
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">'
        f"{urls}</urlset>"
    )


@dataclass(frozen=True)
class Page:
    """One answer: its body, status and headers (Content-Length is added)."""

    body: bytes = b""
    status: int = 200
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "text/html; charset=utf-8"),)


@dataclass(frozen=True)
class Request:
    path: str
    at: float  #: time.monotonic() when the request arrived


class NewsServer:
    """The fixture site; use as a context manager (``with NewsServer() as server:``)."""

    def __init__(
        self, lifetime_s: float = 120.0, max_recorded: int = 10_000, robots_status: int = 200
    ) -> None:
        #: 404 (no robots.txt) or 5xx (robots.txt unavailable) test the fallbacks
        self.robots_status = robots_status
        self.requests: list[Request] = []
        self._max_recorded = max_recorded
        self._lock = threading.Lock()
        self._flaky_failed = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                server._record(self.path)
                page = server._page(self.path)
                self.send_response(page.status)
                for name, value in page.headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(page.body)))
                self.end_headers()
                try:
                    self.wfile.write(page.body)
                except OSError:  # the client stopped reading (a body cut at its cap)
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._timer = threading.Timer(lifetime_s, self.stop)
        self._timer.daemon = True

    def __enter__(self) -> NewsServer:
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._timer.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def _record(self, path: str) -> None:
        with self._lock:
            if len(self.requests) < self._max_recorded:
                self.requests.append(Request(path, time.monotonic()))

    def _page(self, path: str) -> Page:
        status, ctype, body = self._answer(path)
        return Page(body, status, (("Content-Type", ctype),))

    def _answer(self, path: str) -> tuple[int, str, bytes]:
        path = path.split("#", 1)[0]
        route = path.split("?", 1)[0]
        html = "text/html; charset=utf-8"
        if route == "/robots.txt":
            return self.robots_status, "text/plain", ROBOTS.encode()
        if route == "/rss.xml":
            return 200, "application/rss+xml", _rss(self.base).encode()
        if route == "/atom.xml":
            return 200, "application/atom+xml", _atom(self.base).encode()
        if route == "/sitemap.xml":
            return 200, "application/xml", _sitemap(self.base).encode()
        if route == "/news/flaky":
            with self._lock:
                first, self._flaky_failed = not self._flaky_failed, True
            if first:
                return 500, "text/plain", b"temporarily broken"
            return 200, html, article_html("flaky").encode()
        if route == "/news/broken":
            return 200, html, b"<html><head><title>Broken</title></head><body><artic"
        if route == "/news/binary":
            return 200, html, bytes(range(256)) * 4
        if route == "/mirror/a2-copy":
            return 200, html, article_html("a2").encode()
        if route == "/private/secret":
            return 200, html, article_html("secret").encode()
        slug = route.removeprefix("/news/")
        if route.startswith("/news/") and slug in ARTICLES:
            return 200, html, article_html(slug).encode()
        return 404, "text/plain", b"not found"


class Site(NewsServer):
    """A loopback site serving fixed pages (path -> :class:`Page`; anything else is a 404,
    robots.txt included), recording requests like :class:`NewsServer`. ``pages`` may be
    filled after it started (a page can name another site's port)."""

    def __init__(self, lifetime_s: float = 120.0) -> None:
        super().__init__(lifetime_s)
        self.pages: dict[str, Page] = {}

    def _page(self, path: str) -> Page:
        return self.pages.get(path, Page(b"not found", 404, (("Content-Type", "text/plain"),)))


def rss(*links: str) -> bytes:
    """An RSS feed listing ``links`` (titles "Item 0", "Item 1"...)."""
    items = "".join(
        f"<item><title>Item {i}</title><link>{u}</link></item>" for i, u in enumerate(links)
    )
    return f'<?xml version="1.0"?><rss version="2.0"><channel>{items}</channel></rss>'.encode()


def redirect(location: str, status: int = 302) -> Page:
    return Page(status=status, headers=(("Location", location),))
