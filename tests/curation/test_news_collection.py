"""The collect_news stage against a local fixture site, user files and the embedded corpus."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from hashlib import sha256
from itertools import pairwise
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import ValidationError

from genfair.curation.news import (
    COLUMNS,
    EMBEDDED_SOURCE,
    EmbeddedSource,
    FileSource,
    NewsCollectionConfig,
    NewsSourceError,
    WebSource,
    collect_news,
)
from genfair.curation.news_web import (
    Candidate,
    FetchedArticle,
    FetchState,
    canonical_url,
    parse_listing,
)
from tests.support.news_server import ARTICLES, NewsServer

RATE_S = 0.1
LISTINGS = {"/robots.txt", "/rss.xml", "/atom.xml", "/sitemap.xml"}


def web_config(server: NewsServer, **overrides: Any) -> NewsCollectionConfig:
    sources = [
        WebSource(kind="feed", url=server.url("/rss.xml")),
        WebSource(kind="feed", url=server.url("/atom.xml")),
        WebSource(kind="sitemap", url=server.url("/sitemap.xml")),
    ]
    settings: dict[str, Any] = {"rate_limit_per_host_s": RATE_S, "retry_backoff_s": 0.01}
    return NewsCollectionConfig(sources=sources, **(settings | overrides))


@dataclass
class Runs:
    base: str
    first: pd.DataFrame
    first_requests: list[tuple[str, float]]
    second: pd.DataFrame
    second_paths: list[str]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """One full collection and a rerun on the same state, shared by the web tests."""
    state = tmp_path_factory.mktemp("news_state")
    with NewsServer() as server:
        config = web_config(server)
        first = collect_news(config, state, progress=False)
        first_requests = [(r.path, r.at) for r in server.requests]
        server.clear()
        second = collect_news(config, state, progress=False)
        return Runs(server.base, first, first_requests, second, server.paths())


def _paths(runs: Runs) -> list[str]:
    return [path for path, _ in runs.first_requests]


def test_feed_and_sitemap_articles_are_extracted(runs: Runs) -> None:
    df = runs.first
    assert list(df.columns) == COLUMNS
    expected = {"a1", "a2", "a3", "a4", "a5", "a6", "flaky"}
    # a2 may survive as itself or as its mirror (a2-copy), whichever sorts first
    slugs = {url.rsplit("/", 1)[-1].removesuffix("-copy") for url in df["url"]}
    assert slugs == expected
    by_slug = {
        url.rsplit("/", 1)[-1]: row for url, row in zip(df["url"], df.itertuples(), strict=True)
    }
    for slug in expected - {"a2"}:
        headline, day, section, lead = ARTICLES[slug]
        row = by_slug[slug]
        assert row.headline == headline
        assert lead in row.body and len(row.body) >= 200
        assert row.published == day
        assert row.section == section
        assert row.url == f"{runs.base}/news/{slug}"
        assert row.source == runs.base.removeprefix("http://")
        assert not row.headline_derived
    assert df["article_id"].str.fullmatch(r"[0-9a-f]{16}").all()
    assert df["content_hash"].str.fullmatch(r"[0-9a-f]{16}").all()


def test_robots_disallowed_pages_are_never_requested(runs: Runs) -> None:
    paths = _paths(runs)
    assert paths[0] == "/robots.txt"
    assert not any(p.startswith("/private/") for p in paths)
    assert runs.first.attrs["report"]["skipped"]["robots"] == 1


def test_requests_to_a_host_are_spaced_by_the_rate_limit(runs: Runs) -> None:
    times = [at for _, at in runs.first_requests]
    gaps = [b - a for a, b in pairwise(times)]
    assert len(gaps) > 10
    # arrival times at the server: one request delayed by a busy machine shortens the next
    # gap, so the rule is checked over the whole run, and no gap is near zero (no limiter)
    assert times[-1] - times[0] >= len(gaps) * RATE_S - 0.01, gaps
    assert min(gaps) >= RATE_S / 2, gaps


def test_bad_pages_are_counted_not_fatal(runs: Runs) -> None:
    report = runs.first.attrs["report"]
    assert report["skipped"] == {"http_404": 1, "malformed": 2, "robots": 1}
    assert {"/news/missing", "/news/broken", "/news/binary"} <= set(_paths(runs))


def test_server_error_is_retried(runs: Runs) -> None:
    assert _paths(runs).count("/news/flaky") == 2
    assert f"{runs.base}/news/flaky" in set(runs.first["url"])


def test_duplicates_are_removed_by_url_and_content(runs: Runs) -> None:
    report = runs.first.attrs["report"]
    # the Atom feed lists a1 again with utm_* parameters and a fragment: not refetched
    assert [p for p in _paths(runs) if p.startswith("/news/a1")] == ["/news/a1"]
    assert report["duplicates_url"] == 1
    # /mirror/a2-copy serves a2's page: both fetched, one kept
    assert report["duplicates_content"] == 1
    kept = {u.removeprefix(runs.base) for u in runs.first["url"]}
    assert len({"/news/a2", "/mirror/a2-copy"} & kept) == 1
    assert runs.first["content_hash"].is_unique and runs.first["url"].is_unique
    assert report["rows"] == len(runs.first) == 7


def test_rerun_fetches_no_article_again_and_returns_the_same_table(runs: Runs) -> None:
    assert set(runs.second_paths) <= LISTINGS
    pd.testing.assert_frame_equal(runs.first, runs.second)
    report = runs.second.attrs["report"]
    assert report["fetched"] == 0 and report["skipped"] == runs.first.attrs["report"]["skipped"]


def test_transient_failures_are_retried_on_the_next_run(tmp_path: Path) -> None:
    with NewsServer() as server:
        config = web_config(server, max_retries=0)
        first = collect_news(config, tmp_path, progress=False)
        assert first.attrs["report"]["skipped"]["transient_http_500"] == 1
        server.clear()
        second = collect_news(config, tmp_path, progress=False)
    assert set(server.paths()) - LISTINGS == {"/news/flaky"}
    assert f"{server.base}/news/flaky" in set(second["url"])
    assert len(second) == len(first) + 1


def test_date_window_and_sections_filter(tmp_path: Path) -> None:
    with NewsServer() as server:
        config = web_config(
            server,
            date_from=date(2023, 1, 1),
            date_to=date(2023, 3, 31),
            sections=["politics", "SCIENCE"],
        )
        df = collect_news(config, tmp_path, progress=False)
    assert {u.removeprefix(server.base) for u in df["url"]} == {
        "/news/a1",
        "/news/a3",
        "/news/flaky",
    }
    # the listings date a5 (2022) and a6 (April 2023): outside the window, never fetched
    assert not {"/news/a5", "/news/a6"} & set(server.paths())
    report = df.attrs["report"]
    assert report["filtered_date"] == 2
    assert report["filtered_section"] == 3  # a2 (Business), a4 (Weather), a2-copy


@pytest.mark.parametrize(
    ("status", "private_fetched"), [(404, True), (503, False)], ids=["missing", "5xx"]
)
def test_robots_fallbacks(tmp_path: Path, status: int, private_fetched: bool) -> None:
    """No robots.txt allows everything; an unavailable one forbids everything."""
    with NewsServer(robots_status=status) as server:
        df = collect_news(web_config(server, max_retries=0), tmp_path, progress=False)
    assert ("/private/secret" in server.paths()) is private_fetched
    if not private_fetched:
        assert set(server.paths()) == {"/robots.txt"}
        assert df.empty


def test_max_articles_per_source_and_overall(tmp_path: Path) -> None:
    with NewsServer() as server:
        config = NewsCollectionConfig(
            sources=[WebSource(kind="feed", url=server.url("/rss.xml"), max_articles=2)],
            rate_limit_per_host_s=0.0,
        )
        assert len(collect_news(config, tmp_path, progress=False)) == 2
        capped = config.model_copy(update={"max_articles": 1})
        df = collect_news(capped, tmp_path, progress=False)
    assert len(df) == 1 and df.attrs["report"]["truncated"] == 1


FILE_ROWS = [
    {
        "headline": "Ministers agree fisheries deal",
        "body": "Ministers agreed a fisheries deal late on Thursday. " * 5,
        "source": "reuters",
        "date": "2023-01-05",
        "section": "World",
        "url": "https://WWW.Example.com/a?utm_source=x#frag",
    },
    {
        "headline": "Storm closes ports",
        "body": "A storm closed three ports on the east coast. " * 5,
        "source": "nyt",
        "date": "",
        "section": "",
        "url": "",
    },
]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    frame = pd.DataFrame(rows)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    return path


def _file_config(path: Path, **overrides: Any) -> NewsCollectionConfig:
    return NewsCollectionConfig(sources=[FileSource(kind="file", path=path)], **overrides)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_file_source(tmp_path: Path, suffix: str) -> None:
    path = _write(tmp_path / f"corpus{suffix}", FILE_ROWS)
    df = collect_news(_file_config(path), tmp_path / "state", progress=False)
    rows = {r["source"]: r for r in df.to_dict("records")}
    assert rows["reuters"]["url"] == "https://www.example.com/a"
    assert rows["reuters"]["article_id"] == sha256(b"https://www.example.com/a").hexdigest()[:16]
    assert rows["reuters"]["published"] == "2023-01-05"
    assert rows["nyt"]["published"] is None and rows["nyt"]["section"] is None
    assert rows["nyt"]["url"] is None
    assert not df["headline_derived"].any()
    assert list(df["source"]) == ["nyt", "reuters"]
    again = collect_news(_file_config(path), tmp_path / "state", progress=False)
    pd.testing.assert_frame_equal(df, again)


def test_undated_rows_are_dropped_only_under_a_date_window(tmp_path: Path) -> None:
    path = _write(tmp_path / "corpus.jsonl", FILE_ROWS)
    windowed = collect_news(
        _file_config(path, date_from=date(2023, 1, 1)), tmp_path, progress=False
    )
    assert list(windowed["source"]) == ["reuters"]
    assert windowed.attrs["report"]["filtered_date"] == 1


def test_file_source_errors_name_file_row_and_fix(tmp_path: Path) -> None:
    no_body = _write(tmp_path / "nobody.csv", [{"headline": "x"}])
    with pytest.raises(NewsSourceError, match=r"nobody\.csv.*missing required.*'body'.*Add"):
        collect_news(_file_config(no_body), tmp_path, progress=False)
    strict = {"bad_rows": "fail"}
    empty = _write(tmp_path / "empty.jsonl", [FILE_ROWS[0], {**FILE_ROWS[1], "body": "  "}])
    with pytest.raises(NewsSourceError, match=r"empty\.jsonl: line 2: empty 'body'; fill it"):
        collect_news(_file_config(empty, **strict), tmp_path, progress=False)
    bad_date = _write(tmp_path / "dates.parquet", [{**FILE_ROWS[0], "date": "someday"}])
    with pytest.raises(NewsSourceError, match=r"dates\.parquet: record 1: .*'someday'.*ISO date"):
        collect_news(_file_config(bad_date, **strict), tmp_path, progress=False)


def test_embedded_corpus_has_derived_headlines_and_stable_ids(tmp_path: Path) -> None:
    config = NewsCollectionConfig(sources=[EmbeddedSource(kind="embedded")])
    df = collect_news(config, tmp_path, progress=False)
    # 300 lines, 7 of which repeat an earlier article verbatim
    assert len(df) == 293 and df.attrs["report"]["duplicates_content"] == 7
    assert (df["source"] == EMBEDDED_SOURCE).all() and df["headline_derived"].all()
    pairs = zip(df["headline"], df["body"], strict=True)
    assert all(body.startswith(h) and len(h) < len(body) for h, body in pairs)
    assert df["published"].isna().all() and df["url"].isna().all()
    first = df.loc[df["headline"].str.startswith("Hundreds of people"), "headline"].iloc[0]
    assert first.endswith("towards the town of Hill Top.")
    pd.testing.assert_frame_equal(df, collect_news(config, tmp_path, progress=False))


def test_config_is_strict() -> None:
    with pytest.raises(ValidationError):
        NewsCollectionConfig(sources=[{"kind": "feed", "url": "http://x/f", "bogus": 1}])
    with pytest.raises(ValidationError):
        NewsCollectionConfig(sources=[{"kind": "ftp", "url": "ftp://x/f"}])
    with pytest.raises(ValidationError, match="after date_to"):
        NewsCollectionConfig(
            sources=[{"kind": "embedded"}], date_from="2023-02-01", date_to="2023-01-01"
        )
    sources = [{"kind": "sitemap", "url": "https://x/s.xml"}, {"kind": "file", "path": "a.csv"}]
    parsed = NewsCollectionConfig.model_validate({"sources": sources})
    assert [type(s) for s in parsed.sources] == [WebSource, FileSource]


def test_canonical_url() -> None:
    assert (
        canonical_url("HTTPS://News.Example.COM:443/a/b?utm_medium=x&z=1&a=2#top")
        == "https://news.example.com/a/b?a=2&z=1"
    )
    assert canonical_url("http://h:8080") == "http://h:8080/"


def test_jsonl_syntax_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(FILE_ROWS[0]) + "\n\n{not json\n")
    with pytest.raises(NewsSourceError, match=r"broken\.jsonl: line 3: not JSON"):
        collect_news(_file_config(path, bad_rows="fail"), tmp_path, progress=False)
    report = collect_news(_file_config(path), tmp_path, progress=False).attrs["report"]
    assert report["rejected"] == [
        {"source": str(path), "line": 3, "record": 2,
         "reason": "not JSON (Expecting property name enclosed in double quotes); fix the line"}
    ]  # fmt: skip
    assert report["rows"] == 1


def test_state_survives_a_torn_last_line(tmp_path: Path) -> None:
    state = FetchState(tmp_path)
    article = FetchedArticle("http://h/a", "A", "body", "2023-01-01", None)
    state.record("http://h/a", article, None)
    with state.path.open("a") as fh:
        fh.write('{"url": "http://h/b", "arti')  # the run died mid-write
    reloaded = FetchState(tmp_path)
    assert set(reloaded.done) == {"http://h/a"}
    reloaded.record("http://h/c", None, "http_404")
    assert set(FetchState(tmp_path).done) == {"http://h/a", "http://h/c"}


def test_sitemap_index_and_namespaced_listings_parse() -> None:
    index = (
        b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>https://x/news.xml</loc></sitemap></sitemapindex>"
    )
    assert parse_listing(index) == ([], ["https://x/news.xml"])
    rdf = (
        b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        b'xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        b"<item><title>T</title><link>https://x/a</link><dc:date>2023-01-02T10:00:00+01:00"
        b"</dc:date></item></rdf:RDF>"
    )
    assert parse_listing(rdf) == ([Candidate("https://x/a", "T", "2023-01-02")], [])
