"""News file-source faults (issue 16, items 5 and 7): a row with an extra or missing field, a
malformed line, empty or over-long text, bytes that are not UTF-8, a bad URL and repeated URLs
are reported with their line numbers and skipped; nothing shifts columns silently, and an
unusable file is one clear error naming the file, the line and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from genfair.curation.news import FileSource, NewsCollectionConfig, NewsSourceError, collect_news

BODY = "A storm closed three ports on the east coast on Tuesday. "
HEADER = "headline,body,source,date,url"


def config(path: Path, **overrides: object) -> NewsCollectionConfig:
    return NewsCollectionConfig(sources=[FileSource(kind="file", path=path)], **overrides)


def collect(path: Path, tmp_path: Path, **overrides: object) -> pd.DataFrame:
    return collect_news(config(path, **overrides), tmp_path / "state", progress=False)


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rejected(df: pd.DataFrame) -> dict[int, str]:
    return {r["line"]: r["reason"] for r in df.attrs["report"]["rejected"]}


@pytest.mark.parametrize("where", ["first", "later"])
def test_csv_row_with_an_extra_field_is_rejected_not_shifted(tmp_path: Path, where: str) -> None:
    good = [f"Ports close,{BODY},nyt,2023-01-05,", f"Fish deal,{BODY}x,reuters,2023-01-06,"]
    extra = "Floods, rain,more rain,bbc,2023-01-07,"  # an unquoted comma: one field too many
    rows = [extra, *good] if where == "first" else [*good, extra]
    df = collect(write(tmp_path / "news.csv", [HEADER, *rows]), tmp_path)
    line = 2 if where == "first" else 4
    assert rejected(df) == {
        line: "6 fields, the header has 5 (a comma or quote in an unquoted field shifts the "
        "columns): quote the field"
    }
    # before: pandas made the first column an index (every column shifted by one) for an extra
    # field in the first row, and raised a ParserError for one in a later row
    assert sorted(df["headline"]) == ["Fish deal", "Ports close"]
    assert sorted(df["source"]) == ["nyt", "reuters"]
    assert sorted(df["published"]) == ["2023-01-05", "2023-01-06"]


def test_csv_row_with_a_missing_field_and_line_numbers_across_quoted_newlines(
    tmp_path: Path,
) -> None:
    lines = [
        HEADER,
        f'"Two-line body","{BODY}\nsecond line",nyt,2023-01-05,',  # lines 2-3
        "",  # line 4: blank, not a record
        f"Short row,{BODY},nyt",  # line 5: two fields missing
        f"Fine,{BODY}y,nyt,2023-01-05,",  # line 6
    ]
    df = collect(write(tmp_path / "news.csv", lines), tmp_path)
    assert list(rejected(df)) == [5]
    assert "3 fields, the header has 5" in rejected(df)[5]
    assert df.attrs["report"]["rejected"][0]["record"] == 2
    assert sorted(df["headline"]) == ["Fine", "Two-line body"]


def test_rejected_records_keep_the_other_rows_ids(tmp_path: Path) -> None:
    """Rows without a URL are named by their record number, which counts rejected records:
    fixing a bad record renames no other row."""
    broken = write(tmp_path / "a.csv", [HEADER, "Bad,row", f"One,{BODY}1,s,,", f"Two,{BODY}2,s,,"])
    (tmp_path / "fixed").mkdir()
    fixed = write(
        tmp_path / "fixed" / "a.csv",
        [HEADER, f"Bad,{BODY}0,s,,", f"One,{BODY}1,s,,", f"Two,{BODY}2,s,,"],
    )
    ids_broken = collect(broken, tmp_path).set_index("headline")["article_id"]
    ids_fixed = collect(fixed, tmp_path).set_index("headline")["article_id"]
    assert ids_broken.to_dict() == ids_fixed.drop("Bad").to_dict()


def test_malformed_jsonl_lines_are_reported_with_line_numbers(tmp_path: Path) -> None:
    good = {"headline": "Ports close", "body": BODY, "source": "nyt"}
    path = tmp_path / "news.jsonl"
    path.write_bytes(
        b"\n".join(
            [
                json.dumps(good).encode(),
                b"{not json",
                b'["a", "list"]',
                b"",
                json.dumps({**good, "headline": "Caf\u00e9"}).encode("utf-8").replace(
                    b"Caf\\u00e9", b"Caf\xe9"  # a Latin-1 byte: not UTF-8
                ),
                json.dumps({**good, "headline": "Separator", "body": BODY + "\u2028tail"},
                           ensure_ascii=False).encode(),  # U+2028 inside a string is valid JSON
            ]
        )
        + b"\n"
    )  # fmt: skip
    df = collect(path, tmp_path)
    why = rejected(df)
    assert sorted(why) == [2, 3, 5]
    assert why[2].startswith("not JSON") and "JSON object" in why[3]
    assert why[5] == "not UTF-8: save the file as UTF-8"
    assert sorted(df["headline"]) == ["Ports close", "Separator"]
    assert df.set_index("headline").at["Separator", "body"].endswith("\u2028tail")


def test_non_utf8_csv_row_is_rejected_alone(tmp_path: Path) -> None:
    path = tmp_path / "news.csv"
    path.write_bytes(
        (HEADER + f"\nCaf\xe9 opens,{BODY},nyt,,\nFine,{BODY}2,nyt,,\n").encode("latin-1")
    )
    df = collect(path, tmp_path)
    assert rejected(df) == {2: "'headline' is not UTF-8; save the file as UTF-8"}
    assert df["headline"].tolist() == ["Fine"]


def test_empty_and_huge_texts_are_rejected(tmp_path: Path) -> None:
    huge = "word " * 60_000  # 300,000 characters: past max_body_chars and csv's 128 KiB limit
    lines = [
        HEADER,
        f",{BODY},nyt,,",
        "Empty body,   ,nyt,,",
        f"Huge,{huge},nyt,,",
        f"{'H' * 1001},{BODY},nyt,,",
        f"Fine,{BODY},nyt,,",
    ]
    df = collect(write(tmp_path / "news.csv", lines), tmp_path)
    why = rejected(df)
    assert why[2] == "empty 'headline'; fill it or remove the record"
    assert why[3] == "empty 'body'; fill it or remove the record"
    assert why[4].startswith("body has 299999 characters, above max_body_chars=200000")
    assert why[5].startswith("headline has 1001 characters, above max_headline_chars=1000")
    assert df["headline"].tolist() == ["Fine"]
    # the limits are configuration
    roomy = collect(tmp_path / "news.csv", tmp_path, max_body_chars=400_000)
    assert "Huge" in set(roomy["headline"])


def test_bad_url_and_date_are_rejected(tmp_path: Path) -> None:
    lines = [
        HEADER,
        f"Bad url,{BODY},nyt,,http://[::1",
        f"Bad date,{BODY}2,nyt,someday,",
        f"Fine,{BODY}3,nyt,2023-02-01,https://example.com/a",
    ]
    df = collect(write(tmp_path / "news.csv", lines), tmp_path)
    why = rejected(df)
    assert why[2].startswith("url 'http://[::1' is not a URL") and "fix or empty it" in why[2]
    assert why[3] == "unreadable date 'someday'; use an ISO date such as 2023-01-31"
    assert df["headline"].tolist() == ["Fine"]


def test_duplicate_urls_in_a_file_are_reported_and_the_first_kept(tmp_path: Path) -> None:
    lines = [
        HEADER,
        f"First,{BODY}1,nyt,,https://example.com/a?utm_source=x",
        f"Other,{BODY}2,nyt,,https://example.com/b",
        f"Repeat,{BODY}3,nyt,,https://EXAMPLE.com/a#top",
    ]
    df = collect(write(tmp_path / "news.csv", lines), tmp_path)
    report = df.attrs["report"]
    assert report["duplicate_urls"] == [
        {"source": str(tmp_path / "news.csv"), "line": 4, "record": 3, "first_line": 2,
         "url": "https://example.com/a"}
    ]  # fmt: skip
    assert report["duplicates_url"] == 1 and report["rejected"] == []
    assert sorted(df["headline"]) == ["First", "Other"]


def test_fail_mode_stops_at_the_first_bad_record(tmp_path: Path) -> None:
    path = write(tmp_path / "news.csv", [HEADER, f"Fine,{BODY},nyt,,", "Bad,row"])
    with pytest.raises(NewsSourceError, match=r"news\.csv: line 3: 2 fields, the header has 5"):
        collect(path, tmp_path, bad_rows="fail")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.csv", b"", r"empty\.csv: empty file; the first line must name the columns"),
        ("quote.csv", (HEADER + '\n"Unclosed,body,nyt,,\n').encode(),
         r"quote\.csv: line 2: CSV syntax error in the record starting there .*fix the quoting"),
        ("cut.parquet", b"PAR1\x00\x00", r"cut\.parquet: not a readable parquet file"),
    ],
    ids=["empty", "unclosed-quote", "truncated-parquet"],
)  # fmt: skip
def test_unusable_files_are_one_clear_error(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(NewsSourceError, match=message):
        collect(path, tmp_path)


def test_missing_file_names_the_path_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(NewsSourceError, match=r"nowhere\.csv: no such file; fix the path"):
        collect(tmp_path / "nowhere.csv", tmp_path)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_one_line_file_beyond_the_record_bound_stops_streamed(
    tmp_path: Path, suffix: str
) -> None:
    """Issue 44: a 2 GiB one-line news file was read whole (4.3 GB resident) before "missing
    required column(s)". Files are streamed line by line within a record's bound: 64 MB of
    one line (with small limits) stops at the bound, having read no more than it."""
    import tracemalloc

    path = tmp_path / f"huge{suffix}"
    with path.open("w") as fh:
        for _ in range(64):
            fh.write("x" * 2**20)
    tracemalloc.start()
    with pytest.raises(NewsSourceError) as error:
        collect(path, tmp_path, max_body_chars=10_000, max_headline_chars=100)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    message = str(error.value)
    assert "\n" not in message and str(path) in message and "longer than 126136" in message
    assert peak < 8 * 2**20  # a few records' worth, not the 64 MB file


def test_a_parquet_file_beyond_the_record_bound_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "huge.parquet"
    pd.DataFrame({"headline": ["h"], "body": ["x" * 2_000_000]}).to_parquet(path)
    with pytest.raises(NewsSourceError, match=r"huge\.parquet: \d+ bytes uncompressed for 1 row"):
        collect(path, tmp_path, max_body_chars=10_000, max_headline_chars=100)


def test_every_input_file_read_whole_is_refused_above_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44 point 8: the other file sources (FACET annotations, the occupations tables,
    Flickr30k captions and the caption set, OpenBias's published proposals and synonyms) are
    read whole, so each is refused above genfair.limits.MAX_INPUT_FILE_BYTES before it is read
    (here set to 1 KiB), in one line naming the file and the bound."""
    import genfair.limits
    from genfair.curation.facet import FacetAnnotationError, _read_annotations
    from genfair.curation.occupations import ReferenceDataError, _read_csv
    from genfair.methodologies.open_bias.captions import (
        CaptionDataError,
        _flickr_rows,
        load_caption_set,
    )
    from genfair.methodologies.open_bias.knowledge_base import SynonymTable
    from genfair.methodologies.open_bias.published import load_published_proposals

    monkeypatch.setattr(genfair.limits, "MAX_INPUT_FILE_BYTES", 1024)
    big = tmp_path / "big.csv"
    big.write_text("a,b\n" + "x,y\n" * 1000)
    for read, error in (
        (_read_annotations, FacetAnnotationError),
        (lambda p: _read_csv(p, ["a", "b"]), ReferenceDataError),
        (_flickr_rows, CaptionDataError),
        (load_caption_set, CaptionDataError),
        (load_published_proposals, CaptionDataError),
        (SynonymTable.from_csv, ValueError),
    ):
        with pytest.raises(error, match=r"big\.csv: 4,004 bytes, above the 1,024") as caught:
            read(big)
        assert "\n" not in str(caught.value)
