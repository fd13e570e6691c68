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

Bad records of a file source (a CSV row with more or fewer fields than the header, a line
that is not JSON or not UTF-8, an empty or over-long headline or body, an unreadable date or
URL) are skipped and listed in the report's ``rejected`` with the file, the line and the
reason (``bad_rows="fail"`` makes the first one an error instead); so are web articles over
``max_body_chars``. Record numbers (and so the ``article_id`` of rows without a URL) count
every non-blank record, rejected ones included, so fixing one record renames no other.
A URL repeated inside one file is listed in ``duplicate_urls`` (its first line and the
repeat's); only the first row is kept, as for any duplicate.

Undated rows: a date window can only be checked against a date, so when ``date_from`` or
``date_to`` is set, rows without one are dropped (counted as ``filtered_date``); without
a window they are kept. With ``sections`` set, rows without a section are dropped too.
Filters run before de-duplication so a duplicate that fails a filter cannot shadow its
twin that passes.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import nupunkt
import pandas as pd
from tqdm import tqdm

from genfair.curation.config import (
    EMBEDDED_SOURCE,
    EmbeddedSource,
    FileSource,
    NewsCollectionConfig,
    WebSource,
)
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
from genfair.curation.web_guard import Refused, check_link, origin

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
    #: web listings that could not be read: the configured source, the listing URL (the
    #: source or a sitemap it names) and the reason; the other sources go on. ``None`` (left
    #: out of the report) without web sources
    failed_listings: list[dict[str, str]] | None = None
    filtered_date: int = 0
    filtered_section: int = 0
    duplicates_url: int = 0
    duplicates_content: int = 0
    truncated: int = 0  #: rows beyond ``max_articles``
    rows: int = 0
    #: file records skipped: source file, line (None for parquet), record, reason
    rejected: list[dict[str, Any]] = field(default_factory=list)
    #: a URL repeated inside one file: source file, line, first_line, url
    duplicate_urls: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["skipped"] = dict(sorted(self.skipped.items()))
        if self.failed_listings is None:
            del out["failed_listings"]
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
    listing = list_candidates(client, source.url)
    report.failed_listings = (report.failed_listings or []) + [
        {"source": source.url, "listing": url, "reason": reason}
        for url, reason in listing.failed.items()
    ]
    if listing.bad_links:
        report.skipped["bad_url"] += listing.bad_links
    used = 0
    for cand in tqdm(listing.candidates, desc=f"news {name}", unit="article", disable=not progress):
        if source.max_articles is not None and used >= source.max_articles:
            break
        key = canonical_url(cand.url)
        if cand.published and not _in_window(cand.published, cfg):
            report.filtered_date += 1  # not fetched at all: the listing's date suffices
            continue
        article = _fetch_or_reuse(key, cand, source.url, client, state, report)
        if isinstance(article, str):
            report.skipped[article] += 1
            continue
        if len(article.body) < cfg.min_body_chars:
            report.skipped["too_short"] += 1
            continue
        if len(article.body) > cfg.max_body_chars:
            report.skipped["too_long"] += 1
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
    source: str,
    client: PoliteClient,
    state: FetchState,
    report: CollectionReport,
) -> FetchedArticle | str:
    """The article from the state file, or fetched now and recorded there; or why not.

    Robots-forbidden and refused URLs are not recorded: robots.txt is re-read and the link
    checked again on every run. A link is checked before its site's robots.txt is asked for,
    so a refused site receives no request at all."""
    if (done := state.done.get(key)) is not None:
        report.reused += 1
        return FetchedArticle(**done["article"]) if done["article"] else str(done["reason"])
    try:
        check_link(httpx.URL(cand.url), origin(source))
        if forbidden := client.forbidden(cand.url, source):
            return forbidden
        article = fetch_article(client, cand, source)
    except (FetchFailed, Refused) as exc:
        log.info("skipping %s (listed by %s): %s", cand.url, source, exc)
        if isinstance(exc, Refused):
            return exc.reason
        if exc.transient:
            return f"transient_{exc.reason}"
        if exc.recorded:
            state.record(key, None, exc.reason)
        return exc.reason
    except httpx.TransportError:  # the name of the link's host does not resolve
        return "transient_network_error"
    report.fetched += 1
    state.record(key, article, None)
    return article


@dataclass(frozen=True)
class _Record:
    """One non-blank record of a file source: its number, first line, and fields or the
    reason it cannot be read."""

    number: int
    line: int | None
    fields: dict[str, Any] | None
    problem: str | None = None


def _has_bad_bytes(text: str) -> bool:
    """Bytes that were not UTF-8, kept as lone surrogates by ``surrogateescape``."""
    return any("\udc80" <= ch <= "\udcff" for ch in text)


def record_chars(cfg: NewsCollectionConfig) -> int:
    """The longest line a file source's record may take: its headline and body at their
    limits, each character written as a 6-character JSON escape, plus 64 Ki for the other
    fields. A file is streamed line by line within this bound, never read whole (a 2 GiB
    one-line file took 4.3 GB resident; issue 44)."""
    return 6 * (cfg.max_headline_chars + cfg.max_body_chars) + 65_536


def _lines(path: Path, limit: int, newline: str) -> Iterator[str]:
    """The file's lines, streamed; bytes that are not UTF-8 survive as surrogates, so the
    record that holds them (not the whole file) is rejected. A line longer than ``limit``
    characters stops the file with one line naming it and the bound."""
    with open(path, encoding="utf-8", errors="surrogateescape", newline=newline) as fh:
        for number, line in enumerate(iter(lambda: fh.readline(limit + 1), ""), start=1):
            if len(line) > limit:
                raise NewsSourceError(
                    f"{path}: line {number} is longer than {limit} characters, the most a "
                    "record may take (6 x (max_headline_chars + max_body_chars) + 64 Ki): "
                    "split the file into one record per line or raise those limits"
                )
            yield line.removeprefix("\ufeff") if number == 1 else line


@contextmanager
def _csv_field_limit(limit: int) -> Iterator[None]:
    # the csv module refuses fields over 128 KiB by default; over-long texts must reach the
    # max_*_chars check (a reported row), not abort the file. No field exceeds the file size.
    previous = csv.field_size_limit()
    csv.field_size_limit(max(previous, min(limit, sys.maxsize)))
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _read_csv_records(path: Path, limit: int) -> tuple[list[str], list[_Record]]:
    records: list[_Record] = []
    with _csv_field_limit(limit + 1):
        # strict: an unclosed quote is an error, not a field that swallows the next rows
        reader = csv.reader(_lines(path, limit, ""), strict=True)
        next_line = 1
        try:
            header = next(reader, None)
            if header is None:
                raise NewsSourceError(
                    f"{path}: empty file; the first line must name the columns (headline,body,...)"
                )
            header = [h.strip() for h in header]
            next_line = reader.line_num + 1
            for cells in reader:
                start, next_line = next_line, reader.line_num + 1
                if not any(c.strip() for c in cells):
                    continue  # blank line: not a record
                number = len(records) + 1
                if len(cells) != len(header):
                    records.append(_Record(number, start, None, (
                        f"{len(cells)} fields, the header has {len(header)} (a comma or quote "
                        "in an unquoted field shifts the columns): quote the field"
                    )))  # fmt: skip
                else:
                    records.append(_Record(number, start, dict(zip(header, cells, strict=True))))
        except csv.Error as exc:
            raise NewsSourceError(
                f"{path}: line {next_line}: CSV syntax error in the record starting there "
                f"(read up to line {reader.line_num}: {exc}); fix the quoting"
            ) from exc
    return header, records


def _read_jsonl_records(path: Path, limit: int) -> tuple[list[str], list[_Record]]:
    records: list[_Record] = []
    # split on newlines only: JSON strings may hold U+2028 and other characters that
    # str.splitlines() treats as line breaks
    for line, text in enumerate(_lines(path, limit, "\n"), start=1):
        if not text.strip():
            continue
        number = len(records) + 1
        if _has_bad_bytes(text):
            records.append(_Record(number, line, None, "not UTF-8: save the file as UTF-8"))
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            records.append(_Record(number, line, None, f"not JSON ({exc.msg}); fix the line"))
            continue
        if not isinstance(record, dict):
            records.append(
                _Record(number, line, None, "not a JSON object; write one object per line")
            )
            continue
        records.append(_Record(number, line, record))
    return sorted({k for r in records if r.fields for k in r.fields}), records


def _read_records(path: Path, limit: int) -> tuple[list[str], list[_Record]]:
    """The columns and the records of a file source, each within ``limit`` characters."""
    if not path.is_file():
        raise NewsSourceError(f"{path}: no such file; fix the path in the file source")
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".ndjson"}:
        return _read_jsonl_records(path, limit)
    if suffix == ".csv":
        return _read_csv_records(path, limit)
    try:
        _check_parquet_size(path, limit)
        table = pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise NewsSourceError(
            f"{path}: not a readable parquet file ({exc}); write it again or use JSONL/CSV"
        ) from exc
    records = [_Record(i, None, rec) for i, rec in enumerate(table.to_dict("records"), start=1)]
    return list(table.columns), records


def _check_parquet_size(path: Path, limit: int) -> None:
    """A parquet file is read whole: its uncompressed size (from its footer, before any data
    is read) must stay within ``limit`` bytes a row."""
    import pyarrow.parquet as pq  # noqa: PLC0415 - only a parquet source needs it

    meta = pq.ParquetFile(path).metadata
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if size > max(meta.num_rows, 1) * limit:
        raise NewsSourceError(
            f"{path}: {size} bytes uncompressed for {meta.num_rows} row(s), above {limit} a "
            "row (6 x (max_headline_chars + max_body_chars) + 64 Ki); split the records"
        )


def _text(value: Any) -> str | None:
    """A cell as stripped text, or None for empty/NaN cells."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    text = str(value).strip()
    return text or None


def _file_row(
    path: Path, record: dict[str, Any], number: int, cfg: NewsCollectionConfig
) -> dict[str, Any]:
    """One table row from a file record; ``ValueError`` says why the record is unusable."""
    bad = [k for k, v in record.items() if isinstance(v, str) and _has_bad_bytes(v)]
    if bad:
        raise ValueError(f"{bad[0]!r} is not UTF-8; save the file as UTF-8")
    headline, body = _text(record.get("headline")), _text(record.get("body"))
    if headline is None or body is None:
        empty = "headline" if headline is None else "body"
        raise ValueError(f"empty {empty!r}; fill it or remove the record")
    for name, text, limit in (
        ("headline", headline, cfg.max_headline_chars),
        ("body", body, cfg.max_body_chars),
    ):
        if len(text) > limit:
            raise ValueError(
                f"{name} has {len(text)} characters, above max_{name}_chars={limit} (several "
                "articles glued together?); split the record or raise the limit"
            )
    date_col = "published" if "published" in record else "date"
    raw_date = _text(record.get(date_col))
    published = iso_date(raw_date)
    if raw_date is not None and published is None:
        raise ValueError(f"unreadable {date_col} {raw_date!r}; use an ISO date such as 2023-01-31")
    url = _text(record.get("url"))
    try:
        key = canonical_url(url) if url else None
    except ValueError as exc:
        raise ValueError(f"url {url!r} is not a URL ({exc}); fix or empty it") from None
    return _row(
        id_key=key or f"file:{path.name}#{number}",
        source=_text(record.get("source")) or path.stem,
        url=key,
        headline=headline,
        body=body,
        published=published,
        section=_text(record.get("section")),
    )


def _collect_file(
    source: FileSource, cfg: NewsCollectionConfig, report: CollectionReport
) -> list[dict[str, Any]]:
    path = source.path
    columns, records = _read_records(path, record_chars(cfg))
    missing = [c for c in ("headline", "body") if c not in columns]
    if missing:
        raise NewsSourceError(
            f"{path}: missing required column(s) {missing}; found {columns}. "
            "Add them (headline = the prompt title, body = the article text)."
        )
    rows: list[dict[str, Any]] = []
    first_line: dict[str, int | None] = {}
    for rec in records:
        problem = rec.problem
        if rec.fields is not None:
            try:
                row = _file_row(path, rec.fields, rec.number, cfg)
            except ValueError as exc:
                problem = str(exc)
        where = f"line {rec.line}" if rec.line is not None else f"record {rec.number}"
        if problem is not None:
            if cfg.bad_rows == "fail":
                raise NewsSourceError(f"{path}: {where}: {problem}")
            report.rejected.append(
                {"source": str(path), "line": rec.line, "record": rec.number, "reason": problem}
            )
            continue
        if row["url"] is not None:
            if row["url"] in first_line:
                report.duplicate_urls.append(
                    {"source": str(path), "line": rec.line, "record": rec.number,
                     "first_line": first_line[row["url"]], "url": row["url"]}
                )  # fmt: skip
            else:
                first_line[row["url"]] = rec.line if rec.line is not None else rec.number
        rows.append(row)
    if report.rejected:
        log.warning(
            "%d record(s) of the news file sources rejected (listed in the report), e.g. %s",
            len(report.rejected), report.rejected[0],
        )  # fmt: skip
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
            max_download_mb=config.max_download_mb,
            sources=[s.url for s in web],
        ) as client:
            for source in web:
                rows += _collect_web(source, config, client, state, report, progress)
    for source in config.sources:
        if isinstance(source, FileSource):
            rows += _collect_file(source, config, report)
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
