"""What the news web collector refuses (issue 32): links to non-public addresses off their
source's origin (at every redirect, and again where the connection opens), bodies past
``max_download_mb`` once decoded, and unusable links or listings, each a counted skip.

Every server is a loopback :class:`Site`: the source's own origin is the user's choice (so
its pages are fetched), another port of 127.0.0.1 is "the machine" a feed must not reach."""

from __future__ import annotations

import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genfair.curation import news, news_web
from genfair.curation.news import NewsCollectionConfig, WebSource, collect_news
from genfair.curation.web_guard import GuardedBackend, Inflater, Refused, is_public, read_capped
from tests.support.bombs import gzip_bomb, stacked_gzip_bomb
from tests.support.news_server import Page, Site, article_html, redirect, rss

#: text only the "secret" service on another port holds
CANARY = "CANARY-7f3a internal service page"
SECRET_HTML = article_html("a3").replace("Scientists map", CANARY).encode()


def collect(tmp_path: Path, *urls: str, **settings: Any) -> pd.DataFrame:
    sources = [WebSource(kind="feed", url=u) for u in urls]
    defaults: dict[str, Any] = {"rate_limit_per_host_s": 0, "retry_backoff_s": 0.01}
    config = NewsCollectionConfig(sources=sources, **(defaults | settings))
    return collect_news(config, tmp_path / "state", progress=False)


@pytest.fixture
def sites() -> Iterator[tuple[Site, Site]]:
    """A news site (the configured source) and a secret service on another port."""
    with Site() as source, Site() as secret:
        secret.pages["/secret"] = Page(SECRET_HTML)
        source.pages["/news/ok"] = Page(article_html("a1").encode())
        yield source, secret


def report(df: pd.DataFrame) -> dict[str, Any]:
    return df.attrs["report"]


def assert_no_canary(df: pd.DataFrame, state: Path) -> None:
    assert not df["body"].str.contains("CANARY").any()
    assert not df["headline"].str.contains("CANARY").any()
    assert "CANARY" not in (state / "fetched.jsonl").read_text(encoding="utf-8")


def test_a_feed_link_to_another_port_of_the_machine_is_never_requested(
    tmp_path: Path, sites: tuple[Site, Site]
) -> None:
    source, secret = sites
    host_by_name = secret.url("/secret").replace("127.0.0.1", "localhost")
    source.pages["/rss.xml"] = Page(
        rss(source.url("/news/ok"), secret.url("/secret"), host_by_name, "http://[::1]:9/x")
    )
    index = (
        f"<sitemapindex><sitemap><loc>{secret.url('/sitemap.xml')}</loc></sitemap></sitemapindex>"
    )
    source.pages["/index.xml"] = Page(index.encode())
    df = collect(tmp_path, source.url("/rss.xml"), source.url("/index.xml"))
    assert secret.paths() == []  # not the page, not even its robots.txt
    assert report(df)["skipped"] == {"private_address": 3}
    assert report(df)["failed_listings"] == [
        {
            "source": source.url("/index.xml"),
            "listing": secret.url("/sitemap.xml"),
            "reason": "private_address",
        }
    ]
    assert list(df["url"]) == [source.url("/news/ok")]  # the source's own origin is fine
    assert_no_canary(df, tmp_path / "state")


def test_redirects_are_checked_at_every_hop(tmp_path: Path, sites: tuple[Site, Site]) -> None:
    source, secret = sites
    source.pages |= {
        "/rss.xml": Page(rss(source.url("/news/moved"), source.url("/news/out"), "/news/loop")),
        "/news/moved": redirect("/news/ok", 301),  # same origin: followed
        "/news/out": redirect(secret.url("/secret")),
        "/news/loop": redirect("/news/loop"),
        "/moved-feed.xml": redirect(secret.url("/secret")),  # the source itself redirects
    }
    df = collect(tmp_path, source.url("/rss.xml"), source.url("/moved-feed.xml"))
    assert secret.paths() == []
    assert report(df)["skipped"] == {"private_address": 1, "redirect_loop": 1}
    assert report(df)["failed_listings"] == [
        {
            "source": source.url("/moved-feed.xml"),
            "listing": source.url("/moved-feed.xml"),
            "reason": "private_address",
        }
    ]
    assert list(df["headline"]) == ["Item 0"]  # /news/moved, whose redirect stayed home
    assert_no_canary(df, tmp_path / "state")


def test_the_connection_is_checked_too(
    tmp_path: Path, sites: tuple[Site, Site], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that resolved to a public address when the link was checked and to 127.0.0.1
    when the connection opens (DNS rebinding): without the first check, the second holds."""
    source, secret = sites
    source.pages["/rss.xml"] = Page(rss(source.url("/news/ok"), secret.url("/secret")))
    monkeypatch.setattr(news, "check_link", lambda *_: None)
    monkeypatch.setattr(news_web, "check_link", lambda *_: None)
    df = collect(tmp_path, source.url("/rss.xml"))
    assert secret.paths() == []
    # its robots.txt could not be asked for, so nothing of that site is
    assert report(df)["skipped"] == {"robots_unavailable": 1}
    assert list(df["url"]) == [source.url("/news/ok")]


def test_the_guarded_backend_connects_to_trusted_or_public_addresses_only() -> None:
    backend = GuardedBackend([("http", "127.0.0.1", 1)])
    with pytest.raises(Refused, match="non-public address"):
        backend.connect_tcp("127.0.0.1", 2)
    with pytest.raises(Refused, match="non-public address"):
        backend.connect_tcp("localhost", 1)  # trusted is 127.0.0.1:1 by that name only
    with pytest.raises(Exception, match="refused|connect"):
        backend.connect_tcp("127.0.0.1", 1)  # trusted: tried (nothing listens on port 1)


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),  # cloud metadata
        ("100.64.0.1", False),  # shared (carrier-grade NAT)
        ("0.0.0.0", False),
        ("240.0.0.1", False),  # reserved
        ("224.0.0.251", False),  # multicast, which is_global calls global
        ("::1", False),
        ("fe80::1%2", False),
        ("fc00::1", False),
        ("ff02::1", False),
        ("::ffff:127.0.0.1", False),
        ("8.8.8.8", True),
        ("2001:4860:4860::8888", True),
        ("::ffff:8.8.8.8", True),
    ],
)
def test_is_public(address: str, public: bool) -> None:
    assert is_public(address) is public


#: zlib.crc32 of 2 GiB of zero bytes (4 s to compute, so computed once)
def test_a_gzip_bomb_is_cut_at_the_cap_in_little_memory(
    tmp_path: Path, sites: tuple[Site, Site]
) -> None:
    import trafilatura  # noqa: F401 - imported before measuring: its import is not the fetch

    source, _ = sites
    bomb = gzip_bomb()
    assert len(bomb) < 2.1 * 2**20
    encoded = (("Content-Type", "text/html"), ("Content-Encoding", "gzip"))
    gz_listing = zlib.compress(rss(source.url("/news/ok")), wbits=16 + zlib.MAX_WBITS)
    source.pages |= {
        "/rss.xml": Page(rss(source.url("/news/bomb"), source.url("/news/ok"))),
        "/news/bomb": Page(bomb, headers=encoded),
        "/bomb.xml": Page(bomb, headers=encoded),
        # a sitemap.xml.gz: the body is a gzip file (no Content-Encoding), inflated too
        "/feed.xml.gz": Page(gz_listing, headers=(("Content-Type", "application/gzip"),)),
    }
    urls = [source.url(p) for p in ("/rss.xml", "/bomb.xml", "/feed.xml.gz")]
    began = time.perf_counter()
    tracemalloc.start()
    try:
        df = collect(tmp_path, *urls, max_download_mb=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.0f} MiB while reading a 1 MiB cap"
    assert time.perf_counter() - began < 20
    assert report(df)["skipped"] == {"too_large": 1}
    assert report(df)["failed_listings"] == [
        {"source": urls[1], "listing": urls[1], "reason": "too_large"}
    ]
    assert list(df["url"]) == [source.url("/news/ok")]
    assert report(df)["reused"] == 1  # the .gz listing's link, fetched through the first


def test_bad_links_and_dead_sources_are_counted_skips(
    tmp_path: Path, sites: tuple[Site, Site]
) -> None:
    """Before: a link with port 99999 ended the stage with `unexpected ValueError`, and an
    unknown XML encoding with `unexpected LookupError`."""
    source, _ = sites
    with Site() as gone:
        dead = gone.url("/rss.xml")  # a port nothing listens on once the site stops
    links = ["http://127.0.0.1:99999/x", "ftp://example.org/a", "http://[::1/x", "javascript:x"]
    source.pages |= {
        "/rss.xml": Page(rss(*links, source.url("/news/ok"))),
        "/not-xml": Page(b"<html>a page, not a feed"),
        "/bogus.xml": Page(b'<?xml version="1.0" encoding="bogus"?><rss/>'),
        "/bad-redirect": redirect("http://[::1/feed"),  # httpx: RemoteProtocolError
    }
    urls = [source.url(p) for p in ("/rss.xml", "/not-xml", "/bogus.xml", "/bad-redirect")]
    df = collect(tmp_path, urls[0], dead, *urls[1:], max_retries=0)
    assert report(df)["skipped"] == {"bad_url": 4}
    assert report(df)["failed_listings"] == [
        {"source": dead, "listing": dead, "reason": "robots_unavailable"},
        *(
            {"source": u, "listing": u, "reason": r}
            for u, r in zip(urls[1:], ["not_xml", "not_xml", "network_error"], strict=True)
        ),
    ]
    assert list(df["url"]) == [source.url("/news/ok")]


def test_refused_links_are_checked_again_on_a_rerun(
    tmp_path: Path, sites: tuple[Site, Site]
) -> None:
    """A refusal is not kept in the state file: a larger cap lets the page in on a rerun."""
    source, _ = sites
    big = article_html("a2").encode() + b"<!--" + b" " * 2**20 + b"-->"
    source.pages |= {"/rss.xml": Page(rss(source.url("/news/big"))), "/news/big": Page(big)}
    assert report(collect(tmp_path, source.url("/rss.xml"), max_download_mb=1))["skipped"] == {
        "too_large": 1
    }
    again = collect(tmp_path, source.url("/rss.xml"), max_download_mb=2)
    assert len(again) == 1 and report(again)["fetched"] == 1


def test_a_trickling_body_cannot_hold_the_collector() -> None:
    """Each read may succeed within httpx's timeout; the whole body must fit in timeout_s."""
    response = httpx.Response(200, content=_trickle(0.1, 20))
    began = time.perf_counter()
    with pytest.raises(httpx.ReadTimeout):
        read_capped(response, 2**20, time.monotonic() + 0.5)
    assert time.perf_counter() - began < 1.5


def _trickle(interval_s: float, n: int) -> Iterator[bytes]:
    for _ in range(n):
        time.sleep(interval_s)
        yield b" "


@pytest.mark.parametrize("coding", ["gzip, gzip", "gzip,deflate", "deflate, gzip, identity, gzip"])
def test_stacked_content_encodings_are_refused_unread(
    coding: str, tmp_path: Path, sites: tuple[Site, Site]
) -> None:
    """Each stacked gzip multiplies the size again (a 4,910-byte body of 2 GiB): refused."""
    source, _ = sites
    encoded = (("Content-Type", "text/html"), ("Content-Encoding", coding))
    source.pages |= {
        "/rss.xml": Page(rss(source.url("/news/bomb"), source.url("/news/ok"))),
        "/news/bomb": Page(stacked_gzip_bomb(), headers=encoded),
    }
    tracemalloc.start()
    try:
        df = collect(tmp_path, source.url("/rss.xml"), max_download_mb=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20
    assert report(df)["skipped"] == {"bad_encoding": 1}
    assert list(df["url"]) == [source.url("/news/ok")]


def _layers(body: bytes, codings: list[str]) -> bytes:
    for coding in codings:  # applied in order, as the header lists them
        if coding != "identity":
            body = zlib.compress(body, wbits=(16 if coding == "gzip" else 0) + zlib.MAX_WBITS)
    return body


@settings(max_examples=60, deadline=None)
@given(
    body=st.binary(max_size=3000),
    codings=st.lists(st.sampled_from(["gzip", "deflate", "identity"]), max_size=3),
    limit=st.integers(0, 4000),
    split=st.integers(1, 64),
)
def test_any_encoding_is_decoded_within_the_limit_or_refused(
    body: bytes, codings: list[str], limit: int, split: int
) -> None:
    """An Inflater never holds more than ``limit`` + 1 bytes: it returns the body exactly,
    or refuses (too large, or more than one coding), whatever the header and chunking."""
    raw = _layers(body, codings)
    header = ", ".join(codings)
    try:
        inflater = Inflater(header, limit)
        for at in range(0, len(raw), split):
            inflater.feed(raw[at : at + split])
            assert len(inflater.body) <= limit + 1
    except Refused as exc:
        real = [c for c in codings if c != "identity"]
        assert (exc.reason, len(real) > 1 or len(body) > limit) in (
            ("bad_encoding", True),
            ("too_large", True),
        )
        return
    assert bytes(inflater.body) == body
