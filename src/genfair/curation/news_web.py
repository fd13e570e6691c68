"""Polite, resumable fetching of news articles listed in RSS/Atom feeds and XML sitemaps.

The collector is meant to be pointed at real news sites, so politeness is not optional:
robots.txt is honoured (a 4xx one, i.e. none, allows everything; a 5xx or unreachable one
disallows everything, as Google does, because the site may be unable to say what it
forbids; a listing forbidden by robots.txt is not read either), every request to a
host waits ``rate_limit_per_host_s`` after the previous one, and 429/5xx answers are
retried a few times with exponential backoff. Article pages that cannot be used
(HTTP errors, malformed or non-HTML pages, pages trafilatura finds no text in) are counted
by reason and skipped, never raised.

Safety (:mod:`genfair.curation.web_guard`): a link found in a listing is followed only on
its source's origin or on public addresses, at every redirect; every body is cut at
``max_download_mb`` once decoded. A refused link is a skip counted by reason
(``private_address``, ``too_large``...); an unreadable listing is recorded with its reason
(``Listing.failed``) and the other sources go on.

Resumability: every fetched article URL is appended to ``fetched.jsonl`` in the state
directory with either the extracted article or a permanent failure reason. A rerun reads
that file and does not request those URLs again; only transient failures (network
errors, 429/5xx after the retries) and refusals (links the safety rule or the size cap
refused, checked again under the next run's settings) are left out of the file so that a
rerun tries them.
The extracted article is stored whole (before ``min_body_chars`` is applied) so that
changing the filter does not require refetching.
"""

from __future__ import annotations

import json
import logging
import os
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field, replace
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

import httpx
import pandas as pd
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from genfair.curation.web_guard import (
    ACCEPT_ENCODING,
    MAX_REDIRECTS,
    Refused,
    check_link,
    decoded,
    guarded_transport,
    inflate_gzip_file,
    origin,
    read_capped,
)

log = logging.getLogger(__name__)

#: query parameters that only say where a reader came from; they never change the article
_TRACKING_PARAMS = frozenset({"fbclid", "gclid", "mc_cid", "mc_eid", "ref", "cmpid"})
#: how deep sitemap indexes are followed; real sites use one level, loops must end
_MAX_SITEMAP_DEPTH = 2


def canonical_url(url: str) -> str:
    """The URL used for identity: lower-case scheme and host, no default port, no fragment,
    no tracking parameters (``utm_*`` and a few click ids), remaining parameters sorted."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    if port is not None and (scheme, port) not in {("http", 80), ("https", 443)}:
        host = f"{host}:{port}"
    query = sorted(
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not k.lower().startswith("utm_") and k.lower() not in _TRACKING_PARAMS
    )
    return urlunsplit((scheme, host, parts.path or "/", urlencode(query), ""))


def iso_date(value: str | None) -> str | None:
    """An ISO ``YYYY-MM-DD`` date from RFC 822 (RSS) or ISO 8601 (Atom, sitemaps) text."""
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        return parsedate_to_datetime(text).date().isoformat()
    except (TypeError, ValueError, IndexError):
        pass
    try:
        return pd.Timestamp(text).date().isoformat()
    except (ValueError, OverflowError):
        return None


@dataclass(frozen=True)
class Candidate:
    """An article URL found in a feed or sitemap, with what the listing says about it."""

    url: str
    title: str | None = None
    published: str | None = None
    section: str | None = None


@dataclass(frozen=True)
class FetchedArticle:
    """What was extracted from one article page (stored in the state file)."""

    url: str
    headline: str | None
    body: str
    published: str | None
    section: str | None


class FetchFailed(Exception):
    """An article page that cannot be used; ``transient`` ones are retried on a rerun and
    only ``recorded`` ones are kept in the state file (a refused link is checked again on
    a rerun: the rule or ``max_download_mb`` may have changed since)."""

    def __init__(self, reason: str, transient: bool = False, recorded: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient
        self.recorded = recorded and not transient


class _RetryableStatus(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


def _is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, httpx.UnsupportedProtocol):  # a bad link stays bad
        return False
    return isinstance(exc, _RetryableStatus | httpx.TransportError)


class PoliteClient:
    """An httpx client that waits between requests to the same host, honours robots.txt,
    retries 429/5xx and network errors with exponential backoff, and fetches only what
    :mod:`genfair.curation.web_guard` allows: links on their source's origin or on public
    addresses (checked at every redirect), bodies up to ``max_download_mb`` once decoded.

    ``sources`` are the configured listing URLs: the user's choice, so their hosts may be
    private (a test site, an intranet)."""

    def __init__(
        self,
        *,
        user_agent: str,
        timeout_s: float,
        rate_limit_per_host_s: float,
        max_retries: int,
        retry_backoff_s: float,
        max_download_mb: float,
        sources: list[str],
    ) -> None:
        self._client = httpx.Client(
            headers={"User-Agent": user_agent, "Accept-Encoding": ACCEPT_ENCODING},
            timeout=timeout_s,
            follow_redirects=False,  # each hop is checked (get)
            transport=guarded_transport(origin(url) for url in sources),
        )
        self._user_agent = user_agent
        self._timeout = timeout_s
        self._interval = rate_limit_per_host_s
        self._last_request: dict[str, float] = {}
        self._robots: dict[str, RobotFileParser] = {}
        self._max_retries = max_retries
        self._backoff = retry_backoff_s
        self.max_bytes = int(max_download_mb * 2**20)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> PoliteClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wait_for_host(self, url: httpx.URL) -> None:
        host = url.netloc.decode("ascii").lower()
        ready = self._last_request.get(host, float("-inf")) + self._interval
        if (delay := ready - time.monotonic()) > 0:
            time.sleep(delay)
        self._last_request[host] = time.monotonic()

    def _get_once(self, url: httpx.URL) -> httpx.Response:
        """One request; the body is read (within the cap) only from a 2xx answer."""
        self._wait_for_host(url)
        with self._client.stream("GET", url) as response:
            if response.status_code == 429 or response.status_code >= 500:
                raise _RetryableStatus(response.status_code)
            content = b""
            if response.is_success:
                deadline = time.monotonic() + self._timeout
                content = read_capped(response, self.max_bytes, deadline)
        return decoded(response, content)

    def get(self, url: str, source: str) -> httpx.Response:
        """GET with retries, following redirects that stay allowed for links of ``source``
        (the configured listing the URL was found through). Raises ``Refused`` for a URL,
        redirect or body the collector will not take, ``_RetryableStatus`` or
        ``httpx.TransportError`` when the retries are exhausted; returns any other response
        (4xx included)."""
        retrying = Retrying(
            retry=retry_if_exception(_is_retryable),
            stop=stop_after_attempt(self._max_retries + 1),
            wait=wait_exponential(multiplier=self._backoff, max=60 * self._backoff),
            reraise=True,
        )
        target, allowed = httpx.URL(url), origin(source)
        for _ in range(MAX_REDIRECTS + 1):
            check_link(target, allowed)
            response = retrying(self._get_once, target)
            if not response.has_redirect_location:
                return response
            target = target.join(response.headers["location"])
        raise Refused("redirect_loop", f"more than {MAX_REDIRECTS} redirects")

    def forbidden(self, url: str, source: str) -> str | None:
        """Why robots.txt of the URL's site does not let this user agent fetch it
        (``robots``, or ``robots_unavailable`` when it could not be read), or ``None``."""
        parts = urlsplit(url)
        site = f"{parts.scheme}://{parts.netloc}"
        parser = self._robots.get(site)
        if parser is None:
            parser = self._load_robots(site, source)
            self._robots[site] = parser
        if parser.can_fetch(self._user_agent, url):
            return None
        return "robots_unavailable" if parser.disallow_all else "robots"

    def _load_robots(self, site: str, source: str) -> RobotFileParser:
        parser = RobotFileParser(f"{site}/robots.txt")
        try:
            response = self.get(f"{site}/robots.txt", source)
        except (_RetryableStatus, httpx.TransportError, Refused) as exc:
            log.warning("robots.txt of %s unavailable (%s): not fetching from it", site, exc)
            parser.disallow_all = True  # set only here: it tells "unavailable" from "forbidden"
            return parser
        if response.status_code >= 400:  # no robots.txt (4xx): everything is allowed
            parser.allow_all = True
        else:
            parser.parse(response.text.splitlines())
        return parser


def _local(tag: str) -> str:
    """The tag name without its XML namespace, so RSS 1/2, Atom and sitemaps parse alike."""
    return tag.rsplit("}", 1)[-1].lower()


def _child_text(element: ET.Element, name: str) -> str | None:
    for child in element.iter():
        if child is not element and _local(child.tag) == name and child.text:
            return child.text.strip()
    return None


def parse_listing(xml: bytes) -> tuple[list[Candidate], list[str]]:
    """Article candidates and nested sitemap URLs from an RSS/Atom feed or XML sitemap.

    Raises ``ET.ParseError`` for text that is not XML."""
    root = ET.fromstring(xml)
    kind = _local(root.tag)
    if kind == "sitemapindex":
        return [], [loc for s in root if (loc := _child_text(s, "loc"))]
    candidates: list[Candidate] = []
    if kind == "urlset":
        for entry in root:
            if loc := _child_text(entry, "loc"):
                published = _child_text(entry, "publication_date") or _child_text(entry, "lastmod")
                title = _child_text(entry, "title")
                candidates.append(Candidate(loc, title, iso_date(published)))
        return candidates, []
    for entry in root.iter():
        if _local(entry.tag) not in {"item", "entry"}:
            continue
        link = _entry_link(entry)
        if not link:
            continue
        category = next(
            ((c.get("term") or c.text or "").strip() for c in entry if _local(c.tag) == "category"),
            None,
        )
        published = (
            _child_text(entry, "pubdate")
            or _child_text(entry, "published")
            or _child_text(entry, "date")
            or _child_text(entry, "updated")
        )
        candidates.append(
            Candidate(link, _child_text(entry, "title"), iso_date(published), category or None)
        )
    return candidates, []


def _entry_link(entry: ET.Element) -> str | None:
    """RSS ``<link>text</link>`` or Atom ``<link rel="alternate" href=...>``."""
    for child in entry:
        if _local(child.tag) != "link":
            continue
        if href := child.get("href"):
            if child.get("rel", "alternate") == "alternate":
                return href.strip()
        elif child.text and child.text.strip():
            return child.text.strip()
    return None


@dataclass
class Listing:
    """What a source's listings gave: article candidates, and what could not be used."""

    candidates: list[Candidate] = field(default_factory=list)
    #: listing URL (the source, or a sitemap it names) -> why it could not be read
    failed: dict[str, str] = field(default_factory=dict)
    #: links that are not usable http(s) URLs
    bad_links: int = 0


def _usable_link(base: str, href: str) -> str | None:
    """``href`` made absolute against the listing, when it is an http(s) URL with a host
    and a valid port; ``None`` otherwise."""
    try:
        absolute = urljoin(base, href)
        parts = urlsplit(absolute)
        valid = parts.scheme in {"http", "https"} and bool(parts.hostname) and parts.port != 0
        httpx.URL(absolute)
    except (ValueError, httpx.InvalidURL):  # a port out of range, a bad IPv6 literal...
        return None
    return absolute if valid else None


def list_candidates(
    client: PoliteClient, source: str, url: str | None = None, depth: int = 0
) -> Listing:
    """All candidates of the feed or sitemap ``source`` (following sitemap indexes). An
    unreadable listing is recorded in ``failed`` with its reason and yields nothing, so one
    bad source does not stop the others."""
    url = url or source
    listing = Listing()
    try:
        check_link(httpx.URL(url), origin(source))  # before its robots.txt is asked for
        if forbidden := client.forbidden(url, source):
            raise FetchFailed(forbidden)
        response = client.get(url, source)
        if response.status_code >= 400:
            raise FetchFailed(f"http_{response.status_code}")
        found, nested = parse_listing(inflate_gzip_file(response.content, client.max_bytes))
    except (FetchFailed, Refused) as exc:
        listing.failed[url] = exc.reason
    except _RetryableStatus as exc:
        listing.failed[url] = f"http_{exc.status}"
    except httpx.TransportError:
        listing.failed[url] = "network_error"
    except (ET.ParseError, ValueError, LookupError):  # LookupError: an unknown encoding
        listing.failed[url] = "not_xml"
    if url in listing.failed:
        log.warning(
            "news source %s: cannot read the listing %s (%s); skipped: check the URL, or "
            "remove the source from curation.news.sources",
            source,
            url,
            listing.failed[url],
        )
        return listing
    for cand in found:
        if absolute := _usable_link(url, cand.url):  # relative links resolve against the listing
            listing.candidates.append(replace(cand, url=absolute))
        else:
            listing.bad_links += 1
            log.info("ignoring the link %r in %s: not an http(s) URL", cand.url[:200], url)
    for sitemap in nested if depth < _MAX_SITEMAP_DEPTH else []:
        if (absolute := _usable_link(url, sitemap)) is None:
            listing.bad_links += 1
            continue
        inner = list_candidates(client, source, absolute, depth + 1)
        listing.candidates += inner.candidates
        listing.failed |= inner.failed
        listing.bad_links += inner.bad_links
    return listing


def fetch_article(client: PoliteClient, candidate: Candidate, source: str) -> FetchedArticle:
    """Fetch and extract one page found through the listing ``source``; raises
    ``FetchFailed`` with a reason when unusable.

    The listing's title, date and category win over the page's, because the publisher's
    feed states them explicitly while page extraction guesses (``<title>`` often carries
    the site name, and htmldate may find a modification date)."""
    import trafilatura

    try:
        response = client.get(candidate.url, source)
    except Refused as exc:
        raise FetchFailed(exc.reason, recorded=False) from exc
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        raise FetchFailed("bad_url") from exc
    except _RetryableStatus as exc:
        raise FetchFailed(f"http_{exc.status}", transient=True) from exc
    except httpx.TransportError as exc:
        raise FetchFailed("network_error", transient=True) from exc
    if response.status_code >= 400:
        raise FetchFailed(f"http_{response.status_code}")
    content_type = response.headers.get("content-type", "text/html").lower()
    if "html" not in content_type:
        raise FetchFailed("not_html")
    try:
        doc = trafilatura.bare_extraction(
            response.content, url=str(response.url), with_metadata=True
        )
    except Exception as exc:  # noqa: BLE001 - a broken page must never stop the run
        log.debug("extraction of %s failed: %r", candidate.url, exc)
        raise FetchFailed("malformed") from exc
    if doc is None or not (doc.text or "").strip():
        raise FetchFailed("malformed")
    categories = [c for c in (doc.categories or []) if c]
    return FetchedArticle(
        url=candidate.url,
        headline=candidate.title or doc.title,
        body=doc.text.strip(),
        published=candidate.published or iso_date(doc.date),
        section=candidate.section or (categories[0] if categories else None),
    )


class FetchState:
    """The append-only ``fetched.jsonl`` log that makes collection resumable.

    One JSON line per finished URL (keyed by canonical URL), flushed and fsynced after
    each article so that an interrupted run loses at most the line being written; a torn
    last line is ignored when reading and terminated before the next append."""

    def __init__(self, state_dir: Path) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        self.path = state_dir / "fetched.jsonl"
        self.done: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            raw = self.path.read_bytes()
            for line in raw.decode("utf-8", errors="replace").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                self.done[record["url"]] = record
            if raw and not raw.endswith(b"\n"):
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write("\n")

    def record(self, url: str, article: FetchedArticle | None, reason: str | None) -> None:
        record = {"url": url, "article": asdict(article) if article else None, "reason": reason}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.done[url] = record
