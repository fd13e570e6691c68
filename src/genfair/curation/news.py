"""The ``collect_news`` stage: a corpus of news articles (headline + body) to prompt models with.

Paper 001 collected New York Times and Reuters articles published after the studied
models' training cut-off, so that the originals cannot have been memorised; the headline
is the prompt and the body the human reference. Sources are configuration:

- ``feed`` / ``sitemap``: articles listed in an RSS/Atom feed or XML sitemap, fetched
  politely and resumably (see :mod:`genfair.curation.news_web`);
- ``file``: a user-supplied JSONL/CSV/parquet table, for corpora collected elsewhere
  (or licensed archives that cannot be scraped);
- ``embedded``: gensim's ``lee_background.cor`` (300 ABC news articles), so the default
  study runs offline. It has no headlines: the first sentence (nupunkt) is used and the
  row is marked ``headline_derived``. Its articles are from 2000s ABC news, i.e. *before*
  any modern model's cut-off, which is fine for a smoke-test study but not for a claim
  about memorisation-free references.

Undated rows: a date window can only be checked against a date, so when ``date_from`` or
``date_to`` is set, rows without one are dropped (counted as ``filtered_date``); without
a window they are kept. With ``sections`` set, rows without a section are dropped too.
Filters run before de-duplication so a duplicate that fails a filter cannot shadow its
twin that passes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import nupunkt
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from tqdm import tqdm

from genfair.curation.news_web import (
    Candidate,
    FetchedArticle,
    FetchFailed,
    FetchState,
    PoliteClient,
    canonical_url,
    fetch_article,
    iso_date,
    list_candidates,
)

log = logging.getLogger(__name__)

COLUMNS = [
    "article_id",
    "source",
    "url",
    "headline",
    "body",
    "published",
    "section",
    "content_hash",
    "headline_derived",
]
EMBEDDED_SOURCE = "abc-lee-background (gensim)"
_FILE_SUFFIXES = {".jsonl", ".ndjson", ".csv", ".parquet"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WebSource(_Strict):
    """A news site's RSS/Atom feed or XML sitemap (sitemap indexes are followed)."""

    kind: Literal["feed", "sitemap"]
    url: str
    #: overrides the section found in the listing or the page, e.g. for a per-section feed
    section: str | None = None
    #: at most this many articles of this source are used (after robots and date checks)
    max_articles: int | None = Field(default=None, gt=0)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if urlsplit(value).scheme not in {"http", "https"} or not urlsplit(value).netloc:
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value


class FileSource(_Strict):
    """A JSONL/CSV/parquet file with ``headline`` and ``body`` columns (``source``,
    ``published`` or ``date``, ``section``, ``url`` optional). Errors name the 1-based
    record (data row; CSV header and blank JSONL lines not counted)."""

    kind: Literal["file"]
    path: Path

    @field_validator("path")
    @classmethod
    def _known_suffix(cls, value: Path) -> Path:
        if value.suffix.lower() not in _FILE_SUFFIXES:
            raise ValueError(f"{value}: use one of {sorted(_FILE_SUFFIXES)}")
        return value


class EmbeddedSource(_Strict):
    """A corpus shipped with an installed package; works offline."""

    kind: Literal["embedded"]
    name: Literal["lee_background"] = "lee_background"


NewsSource = Annotated[WebSource | FileSource | EmbeddedSource, Field(discriminator="kind")]


class NewsCollectionConfig(_Strict):
    """What to collect and how politely; dates are inclusive publication-date bounds."""

    sources: list[NewsSource] = Field(min_length=1)
    date_from: date | None = None
    date_to: date | None = None
    #: keep only these sections (case-insensitive); None keeps all
    sections: list[str] | None = None
    rate_limit_per_host_s: float = Field(default=1.0, ge=0)
    user_agent: str = "genfair-news-collector/0.1 (+research)"
    timeout_s: float = Field(default=20, gt=0)
    #: web pages whose extracted body is shorter are skipped (navigation, paywall stubs)
    min_body_chars: int = Field(default=200, ge=0)
    #: retries of a request answered 429/5xx or failing at the network level
    max_retries: int = Field(default=3, ge=0)
    #: first backoff between retries; it doubles each time
    retry_backoff_s: float = Field(default=1.0, ge=0)
    #: cap on the final table, taken in its deterministic order
    max_articles: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _window_order(self) -> NewsCollectionConfig:
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise ValueError(f"date_from {self.date_from} is after date_to {self.date_to}")
        return self


class NewsSourceError(ValueError):
    """A user-supplied source that cannot be used; the message names the file, row and fix."""


@dataclass
class CollectionReport:
    """Counts of what happened, so a thin corpus can be explained (stored in ``df.attrs``)."""

    fetched: int = 0  #: article pages requested and extracted in this run
    #: articles taken from the state file instead of fetched (from an earlier run, or a
    #: URL listed twice in this one)
    reused: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  #: reason -> count
    filtered_date: int = 0
    filtered_section: int = 0
    duplicates_url: int = 0
    duplicates_content: int = 0
    truncated: int = 0  #: rows beyond ``max_articles``
    rows: int = 0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["skipped"] = dict(sorted(self.skipped.items()))
        return out


def _sha16(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def content_hash(body: str) -> str:
    """Hash of the body after NFKC, case folding and whitespace collapsing, so the same
    article re-published with different spacing or typography still counts as a duplicate."""
    normal = " ".join(unicodedata.normalize("NFKC", body).casefold().split())
    return _sha16(normal)


def first_sentence(text: str) -> str:
    """The first sentence (nupunkt knows abbreviations such as "Mr." and "U.S.")."""
    sentences = nupunkt.sent_tokenize(text.strip())
    return sentences[0].strip() if sentences else text.strip()


def _row(
    *,
    id_key: str,
    source: str,
    url: str | None,
    headline: str | None,
    body: str,
    published: str | None,
    section: str | None,
) -> dict[str, Any]:
    """One table row; a missing headline is replaced by the body's first sentence."""
    clean = " ".join((headline or "").split())
    return {
        "article_id": _sha16(id_key),
        "source": source,
        "url": url,
        "headline": clean or first_sentence(body),
        "body": body.strip(),
        "published": published,
        "section": section.strip() if section and section.strip() else None,
        "content_hash": content_hash(body),
        "headline_derived": not clean,
    }


def _in_window(published: str | None, cfg: NewsCollectionConfig) -> bool:
    if cfg.date_from is None and cfg.date_to is None:
        return True
    if published is None:
        return False
    day = date.fromisoformat(published)
    return (cfg.date_from is None or day >= cfg.date_from) and (
        cfg.date_to is None or day <= cfg.date_to
    )


def _collect_web(
    source: WebSource,
    cfg: NewsCollectionConfig,
    client: PoliteClient,
    state: FetchState,
    report: CollectionReport,
    progress: bool,
) -> list[dict[str, Any]]:
    name = urlsplit(source.url).netloc.lower()
    rows: list[dict[str, Any]] = []
    candidates = list_candidates(client, source.url)
    used = 0
    for cand in tqdm(candidates, desc=f"news {name}", unit="article", disable=not progress):
        if source.max_articles is not None and used >= source.max_articles:
            break
        key = canonical_url(cand.url)
        if cand.published and not _in_window(cand.published, cfg):
            report.filtered_date += 1  # not fetched at all: the listing's date suffices
            continue
        article = _fetch_or_reuse(key, cand, client, state, report)
        if isinstance(article, str):
            report.skipped[article] += 1
            continue
        if len(article.body) < cfg.min_body_chars:
            report.skipped["too_short"] += 1
            continue
        used += 1
        rows.append(
            _row(
                id_key=key,
                source=name,
                url=key,
                headline=article.headline,
                body=article.body,
                published=article.published,
                section=source.section or article.section,
            )
        )
    return rows


def _fetch_or_reuse(
    key: str,
    cand: Candidate,
    client: PoliteClient,
    state: FetchState,
    report: CollectionReport,
) -> FetchedArticle | str:
    """The article from the state file, or fetched now and recorded there; or why not.

    Robots-forbidden URLs are not recorded: robots.txt is re-read on every run."""
    if (done := state.done.get(key)) is not None:
        report.reused += 1
        return FetchedArticle(**done["article"]) if done["article"] else str(done["reason"])
    if not client.allowed(cand.url):
        return "robots"
    try:
        article = fetch_article(client, cand)
    except FetchFailed as exc:
        log.info("skipping %s: %s", cand.url, exc.reason)
        if exc.transient:
            return f"transient_{exc.reason}"
        state.record(key, None, exc.reason)
        return exc.reason
    report.fetched += 1
    state.record(key, article, None)
    return article


def _read_table(path: Path) -> pd.DataFrame:
    suffix = path.suffix.lower()
    if not path.is_file():
        raise NewsSourceError(f"{path}: no such file; fix the path in the file source")
    if suffix in {".jsonl", ".ndjson"}:
        records = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise NewsSourceError(f"{path}: line {n} is not JSON ({exc.msg}); fix it") from exc
            if not isinstance(record, dict):
                raise NewsSourceError(f"{path}: line {n} is not a JSON object; write one per line")
            records.append(record)
        return pd.DataFrame.from_records(records)
    if suffix == ".csv":
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    return pd.read_parquet(path)


def _text(value: Any) -> str | None:
    """A cell as stripped text, or None for empty/NaN cells."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    text = str(value).strip()
    return text or None


def _collect_file(source: FileSource) -> list[dict[str, Any]]:
    path = source.path
    table = _read_table(path)
    missing = [c for c in ("headline", "body") if c not in table.columns]
    if missing:
        raise NewsSourceError(
            f"{path}: missing required column(s) {missing}; found {list(table.columns)}. "
            "Add them (headline = the prompt title, body = the article text)."
        )
    date_col = "published" if "published" in table.columns else "date"
    rows = []
    for i, record in enumerate(table.to_dict("records"), start=1):
        headline, body = _text(record["headline"]), _text(record["body"])
        if headline is None or body is None:
            empty = "headline" if headline is None else "body"
            raise NewsSourceError(
                f"{path}: record {i} has an empty {empty!r}; fill it or remove the record"
            )
        raw_date = _text(record.get(date_col))
        published = iso_date(raw_date)
        if raw_date is not None and published is None:
            raise NewsSourceError(
                f"{path}: record {i} has an unreadable {date_col} {raw_date!r}; "
                "use an ISO date such as 2023-01-31"
            )
        url = _text(record.get("url"))
        rows.append(
            _row(
                id_key=canonical_url(url) if url else f"file:{path.name}#{i}",
                source=_text(record.get("source")) or path.stem,
                url=canonical_url(url) if url else None,
                headline=headline,
                body=body,
                published=published,
                section=_text(record.get("section")),
            )
        )
    return rows


def _collect_embedded(source: EmbeddedSource) -> list[dict[str, Any]]:
    from gensim.test.utils import datapath  # noqa: PLC0415 - gensim is slow to import

    path = Path(datapath(f"{source.name}.cor"))
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        _row(
            id_key=f"{source.name}#{i}",
            source=EMBEDDED_SOURCE,
            url=None,
            headline=None,
            body=line,
            published=None,
            section=None,
        )
        for i, line in enumerate(lines)
        if line.strip()
    ]


def _filter_and_dedupe(
    df: pd.DataFrame, cfg: NewsCollectionConfig, report: CollectionReport
) -> pd.DataFrame:
    in_window = df["published"].map(lambda p: _in_window(p, cfg)).astype(bool)
    report.filtered_date += int((~in_window).sum())
    df = df[in_window]
    if cfg.sections is not None:
        wanted = {s.casefold() for s in cfg.sections}
        keep = df["section"].map(lambda s: s is not None and s.casefold() in wanted).astype(bool)
        report.filtered_section += int((~keep).sum())
        df = df[keep]
    has_url = df["url"].notna()
    url_dup = has_url & df.duplicated("url")
    report.duplicates_url += int(url_dup.sum())
    df = df[~url_dup]
    content_dup = df.duplicated("content_hash")
    report.duplicates_content += int(content_dup.sum())
    return df[~content_dup]


def collect_news(
    config: NewsCollectionConfig, state_dir: Path, progress: bool = True
) -> pd.DataFrame:
    """Collect the configured sources into one table with the columns ``COLUMNS``.

    Rows are sorted by ``source`` then ``article_id``; duplicates keep the first row in
    that order. ``df.attrs["report"]`` holds ``CollectionReport.as_dict()``. Web sources
    keep their resumable state in ``state_dir``.
    """
    report = CollectionReport()
    rows: list[dict[str, Any]] = []
    web = [s for s in config.sources if isinstance(s, WebSource)]
    if web:
        state = FetchState(state_dir)
        with PoliteClient(
            user_agent=config.user_agent,
            timeout_s=config.timeout_s,
            rate_limit_per_host_s=config.rate_limit_per_host_s,
            max_retries=config.max_retries,
            retry_backoff_s=config.retry_backoff_s,
        ) as client:
            for source in web:
                rows += _collect_web(source, config, client, state, report, progress)
    for source in config.sources:
        if isinstance(source, FileSource):
            rows += _collect_file(source)
        elif isinstance(source, EmbeddedSource):
            rows += _collect_embedded(source)

    df = pd.DataFrame(rows, columns=COLUMNS, dtype=object).astype({"headline_derived": bool})
    df = df.sort_values(["source", "article_id"], kind="stable", ignore_index=True)
    df = _filter_and_dedupe(df, config, report)
    if config.max_articles is not None and len(df) > config.max_articles:
        report.truncated = len(df) - config.max_articles
        df = df.head(config.max_articles)
    df = df.reset_index(drop=True)
    report.rows = len(df)
    df.attrs["report"] = report.as_dict()
    log.info("collected %d news articles: %s", report.rows, df.attrs["report"])
    return df
