"""FACET curation faults (issue 16, items 4 and 7): huge or absurd inputs, damaged images and
annotation-file faults are each a reported skip naming the row, or one clear error naming the
file, the row and the fix; never a crash of the whole stage. Test images stay tiny on disk."""

from __future__ import annotations

import csv
import io
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from genfair.curation.facet import (
    REQUIRED_COLUMNS,
    FacetAnnotationError,
    FacetConfig,
    curate_facet,
    image_size,
)

BOX = {"x": 8, "y": 8, "width": 40, "height": 48}


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def blank_png(path: Path, width: int, height: int, *, complete: bool = True) -> Path:
    """A 1-bit grayscale PNG of ``width`` x ``height`` black pixels, written as a stream of
    compressed zero rows: a 20000x20000 image takes ~50 KB on disk and no memory to make.
    ``complete=False`` writes the header and a few rows only (a file that declares the size)."""
    row = b"\0" * (1 + (width + 7) // 8)  # filter byte + packed bits
    packer = zlib.compressobj(9)
    body = b"".join(packer.compress(row) for _ in range(height if complete else 4))
    body += packer.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", body)
        + _png_chunk(b"IEND", b"")
    )
    return path


def photo(path: Path, size: tuple[int, int] = (64, 64), fmt: str = "PNG") -> Path:
    rng = np.random.default_rng(len(path.name))
    pixels = rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, format=fmt)
    return path


def release(tmp_path: Path, rows: list[dict[str, object]], text: str | None = None) -> Path:
    """A release folder with ``good.png`` and the annotation ``rows`` (defaults filled)."""
    root = tmp_path / "release"
    (root / "images").mkdir(parents=True, exist_ok=True)
    photo(root / "images" / "good.png")
    if text is None:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=REQUIRED_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for i, row in enumerate(rows, start=1):
            base: dict[str, object] = {c: 0 for c in REQUIRED_COLUMNS}
            base |= {"person_id": str(i), "filename": "good.png", "class1": "nurse"}
            base |= {"gender_presentation_fem": 2, "skin_tone_4": 2, "age_presentation_young": 2}
            base["bounding_box"] = json.dumps(BOX)
            writer.writerow(base | row)
        text = out.getvalue()
    (root / "annotations.csv").write_text(text, encoding="utf-8")
    return root


def curate(root: Path, out: Path, **config: object) -> dict:
    return curate_facet(FacetConfig(release_dir=root, **config), out, progress=False).as_dict()


def reasons(report: dict) -> dict[int, str]:
    return {b["row"]: b["reason"] for b in report["bad_rows"]}


# --- huge inputs (issue 16 item 4) ------------------------------------------------------


def test_decompression_bomb_png_is_a_reported_skip(tmp_path: Path) -> None:
    root = release(tmp_path, [{}, {"filename": "huge.png"}, {"filename": "good.png"}])
    bomb = blank_png(root / "images" / "huge.png", 20_000, 20_000)
    assert bomb.stat().st_size < 200_000  # small on disk, 400 million pixels declared
    report = curate(root, tmp_path / "out")
    why = reasons(report)
    assert list(why) == [2]
    assert "image huge.png is too large for PIL" in why[2]
    assert report["persons_written"] == 2  # the other rows are cropped as usual


def test_image_above_max_image_pixels_is_never_decoded(tmp_path: Path) -> None:
    # 8000x6000 = 48 M pixels: under PIL's own limit, over the default 40 M. The file holds
    # only 4 rows: decoding it would fail as "truncated", so the message proves no decode.
    root = release(tmp_path, [{"filename": "big.png"}, {}])
    blank_png(root / "images" / "big.png", 8000, 6000, complete=False)
    why = reasons(curate(root, tmp_path / "out"))
    assert list(why) == [1]
    assert "big.png is 8000x6000 = 48000000 pixels, above max_image_pixels=40000000" in why[1]
    assert "raise curation.facet.max_image_pixels" in why[1]
    # the limit is configuration: a small one skips the ordinary image too
    small = curate(root, tmp_path / "small", max_image_pixels=1000)
    assert sorted(reasons(small)) == [1, 2] and small["persons_written"] == 0
    assert "good.png is 64x64 = 4096 pixels" in reasons(small)[2]


def test_absurd_box_is_a_bad_row_not_a_memory_error(tmp_path: Path) -> None:
    absurd = [
        {"x": 0, "y": 0, "width": 1e9, "height": 1e9},  # a square of 1e18 pixels
        {"x": 10, "y": 10, "width": 1, "height": 5e6},  # thin but its square is huge
        {"x": -1e12, "y": 5, "width": 30, "height": 30},  # far outside: "lies outside"
    ]
    root = release(tmp_path, [{"bounding_box": json.dumps(b)} for b in absurd] + [{}])
    report = curate(root, tmp_path / "out")
    why = reasons(report)
    assert sorted(why) == [1, 2, 3] and report["persons_written"] == 1
    assert "bounding_box 1e+09x1e+09 is absurd for the 64x64 image" in why[1]
    assert "max_box_area_ratio=2" in why[1] and "fix the box" in why[1]
    assert "is absurd" in why[2]
    assert "lies outside" in why[3]
    # a box filling the image (square = 1.0 x the image) is fine; the ratio is configuration
    fill = release(
        tmp_path / "f", [{"bounding_box": json.dumps(dict(x=0, y=0, width=64, height=64))}]
    )
    assert curate(fill, tmp_path / "f_out")["persons_written"] == 1
    assert reasons(curate(fill, tmp_path / "f_strict", max_box_area_ratio=0.5)) != {}


def test_huge_unannotated_image_is_reported_by_the_detector_pass(tmp_path: Path) -> None:
    root = release(tmp_path, [{}])
    blank_png(root / "images" / "unlisted.png", 20_000, 20_000)
    report = curate(root, tmp_path / "out", detector={"enabled": True})
    assert report["detector"]["images_without_person"] == ["unlisted.png (too large)"]
    assert report["persons_written"] == 1


def test_image_size_reads_the_header_only(tmp_path: Path) -> None:
    path = blank_png(tmp_path / "declared.png", 9000, 7000, complete=False)
    assert image_size(path) == (9000, 7000)


# --- damaged images (issue 16 item 7) ---------------------------------------------------


def test_truncated_and_mislabelled_images_are_reported_skips(tmp_path: Path) -> None:
    root = release(
        tmp_path,
        [{"filename": n} for n in
         ("trunc.jpg", "trunc.png", "text.jpg", "empty.png", "badlen.png", "good.png")],
    )  # fmt: skip
    images = root / "images"
    whole = photo(tmp_path / "whole.jpg", fmt="JPEG").read_bytes()
    (images / "trunc.jpg").write_bytes(whole[: len(whole) // 2])
    whole = photo(tmp_path / "whole.png").read_bytes()
    (images / "trunc.png").write_bytes(whole[: len(whole) // 2])
    (images / "text.jpg").write_text("person_id,filename\n1,a.jpg\n")  # a text file named .jpg
    (images / "empty.png").write_bytes(b"")
    damaged = bytearray(whole)
    damaged[35] = 0  # the IDAT chunk's length: PIL raises SyntaxError("broken PNG file")
    (images / "badlen.png").write_bytes(bytes(damaged))
    report = curate(root, tmp_path / "out")
    why = reasons(report)
    assert sorted(why) == [1, 2, 3, 4, 5]
    names = ("trunc.jpg", "trunc.png", "text.jpg", "empty.png", "badlen.png")
    assert all(why[r].startswith(f"unreadable image {n}") for r, n in enumerate(names, start=1))
    assert "truncated" in why[1] and "truncated" in why[2]
    assert "cannot identify image file" in why[3]
    assert "broken PNG file" in why[5]
    assert report["persons_written"] == 1


def test_randomly_damaged_images_never_stop_the_stage(tmp_path: Path) -> None:
    """Bytes flipped in the first 200 bytes of PNG/JPEG/BMP/WEBP files: PIL raises OSError,
    SyntaxError ("broken PNG file") or DecompressionBombError (a BMP header claiming a huge
    size); each image is a crop or a reported skip."""
    rng = np.random.default_rng(7)
    formats = {"png": "PNG", "jpg": "JPEG", "bmp": "BMP", "webp": "WEBP"}
    names = [f"d{i}.{ext}" for i in range(15) for ext in formats]
    root = release(tmp_path, [{"filename": n} for n in names])
    for name in names:
        path = photo(root / "images" / name, fmt=formats[name.rsplit(".", 1)[1]])
        data = bytearray(path.read_bytes())
        for _ in range(int(rng.integers(1, 6))):
            data[int(rng.integers(0, min(len(data), 200)))] = int(rng.integers(0, 256))
        path.write_bytes(bytes(data))
    report = curate(root, tmp_path / "out")
    assert report["persons_written"] + report["n_bad_rows"] == len(names)
    assert report["n_bad_rows"] > 0


# --- annotation file faults (issue 16 item 7) --------------------------------------------


def test_zero_area_and_non_numeric_boxes_are_bad_rows(tmp_path: Path) -> None:
    boxes = [
        {"x": 5, "y": 5, "width": 0, "height": 20},
        {"x": 5, "y": 5, "width": 20, "height": 0},
        {"x": "left", "y": 5, "width": 20, "height": 20},
        {"x": 5, "y": 5, "width": "NaN", "height": 20},
        {"x": 5, "y": 5, "width": True, "height": 20},
    ]
    rows = [{"bounding_box": json.dumps(b)} for b in boxes]
    rows.append({"bounding_box": '{"x": 5, "y": 5, "width": NaN, "height": 20}'})  # JSON NaN
    rows.append({"gender_presentation_masc": "two"})
    rows.append({"age_presentation_older": "-1"})
    rows.append({"skin_tone_7": "1.5"})
    root = release(tmp_path, [*rows, {}])
    report = curate(root, tmp_path / "out")
    why = reasons(report)
    assert sorted(why) == list(range(1, 10)) and report["persons_written"] == 1
    assert "non-positive size 0.0x20.0" in why[1] and "non-positive size 20.0x0.0" in why[2]
    assert "x is not a finite number: 'left'" in why[3]
    assert "width is not a finite number: 'NaN'" in why[4]
    assert "width is not a finite number: True" in why[5]
    assert "width is not a finite number: nan" in why[6]
    assert "gender_presentation_masc is not a number: 'two'" in why[7]
    assert "age_presentation_older is not a non-negative whole count: '-1'" in why[8]
    assert "skin_tone_7 is not a non-negative whole count: '1.5'" in why[9]


def test_degenerate_boxes_are_bad_rows_with_reasons(tmp_path: Path) -> None:
    """Issue 21.7: a side under one pixel, NaN, infinities and coordinates past a float's
    range are bad rows, never a 0x0 crop nor an OverflowError."""
    cells = [
        json.dumps({"x": 5, "y": 5, "width": 1e-300, "height": 1e-300}),
        json.dumps({"x": 5, "y": 5, "width": 0.5, "height": 20}),
        json.dumps({"x": 5, "y": 5, "width": 20, "height": 0.999}),
        '{"x": 5, "y": 5, "width": Infinity, "height": 20}',
        '{"x": -Infinity, "y": 5, "width": 20, "height": 20}',
        '{"x": 5, "y": NaN, "width": 20, "height": 20}',
        json.dumps({"x": 1.7e308, "y": 5, "width": 1.7e308, "height": 20}),
        json.dumps({"x": 5, "y": 5, "width": 1e200, "height": 1e200}),
    ]
    root = release(tmp_path, [*({"bounding_box": c} for c in cells), {}])
    report = curate(root, tmp_path / "out")
    why = reasons(report)
    assert sorted(why) == list(range(1, 9)) and report["persons_written"] == 1
    assert "bounding_box 1e-300x1e-300 has a side under 1 pixel: fix the box" in why[1]
    assert (
        "0.5x20 has a side under 1 pixel" in why[2]
        and "20x0.999 has a side under 1 pixel" in why[3]
    )
    assert (
        "width is not a finite number: inf" in why[4] and "x is not a finite number: -inf" in why[5]
    )
    assert "y is not a finite number: nan" in why[6]
    assert "reaches past the largest number a float holds" in why[7]
    assert "is absurd for the 64x64 image" in why[8]
    crops = sorted((tmp_path / "out" / "crops").glob("*.png"))
    assert len(crops) == 1 and crops[0].stat().st_size > 100  # only the good row's crop


def test_duplicate_ids_keep_the_first_and_report_the_others(tmp_path: Path) -> None:
    root = release(tmp_path, [{"person_id": "7"}, {"person_id": "7"}, {"person_id": "7 "}])
    report = curate(root, tmp_path / "out")
    assert reasons(report) == {2: "duplicate person_id '7'", 3: "duplicate person_id '7'"}
    persons = pd.read_parquet(tmp_path / "out" / "persons.parquet")
    assert persons["person_id"].tolist() == ["7"]


def test_missing_image_folder_counts_every_row_as_a_missing_image(tmp_path: Path) -> None:
    root = release(tmp_path, [{}, {"filename": "absent.png"}])
    (root / "images" / "good.png").unlink()
    (root / "images").rmdir()
    report = curate(root, tmp_path / "out")
    assert report["missing_images"] == {
        "count": 2, "rows": 2, "files": {"absent.png": [2], "good.png": [1]}
    }  # fmt: skip
    assert report["persons_written"] == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"annotations\.csv: empty file; expected FACET's header row"),
        ("person_id,filename\n", r"missing column\(s\) \['class1'.*point annotations_file"),
        (",".join(REQUIRED_COLUMNS) + '\n1,"a.png\n',
         r"CSV syntax error at line 2, after data row 0 .*fix the quoting"),
        (",".join(REQUIRED_COLUMNS) + "\n1,caf\xe9.png\n",
         r"annotations\.csv: line 2 \(byte \d+\) is not UTF-8; save the file as UTF-8"),
    ],
    ids=["empty", "missing-columns", "unclosed-quote", "not-utf8"],
)  # fmt: skip
def test_unusable_annotation_files_are_one_clear_error(
    tmp_path: Path, text: str, message: str
) -> None:
    root = release(tmp_path, [], text="")
    path = root / "annotations.csv"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(FacetAnnotationError, match=message) as err:
        curate(root, tmp_path / "out")
    assert str(path) in str(err.value)


def test_out_of_memory_on_one_image_is_a_reported_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last line of defence when the limits are set too high for the machine."""
    from genfair.curation import facet

    root = release(tmp_path, [{"filename": "big.png"}, {}])
    photo(root / "images" / "big.png")
    real = facet.load_rgb

    def load(path: Path, max_pixels: int | None = None):
        if path.name == "big.png":
            raise MemoryError
        return real(path, max_pixels)

    monkeypatch.setattr(facet, "load_rgb", load)
    report = curate(root, tmp_path / "out")
    assert reasons(report) == {1: "out of memory on image big.png; lower max_image_pixels"}
    assert report["persons_written"] == 1
