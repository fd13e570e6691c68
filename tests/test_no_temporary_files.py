"""No temporary file survives a failure of a writer (issue 21.4): a full disk or an
interrupt in the middle of a write leaves the folder as it was."""

from __future__ import annotations

import errno
from pathlib import Path

import pandas as pd
import pytest

from genfair import io
from genfair.models.images import ImageStore
from genfair.resources import wordnet

FRAME = pd.DataFrame({"a": [1.5, 2.0], "b": ["x", "y"]})
WRITERS = {
    "write_text": lambda path: io.write_text("hello\n" * 1000, path),
    "write_json": lambda path: io.write_json({"a": list(range(1000))}, path),
    "write_parquet": lambda path: io.write_parquet(FRAME, path),
    "write_csv": lambda path: io.write_csv(FRAME, path),
}


@pytest.mark.parametrize(
    "failure", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()]
)
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_failed_write_leaves_only_the_previous_file(
    writer: str, failure: BaseException, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "out" / "file"
    WRITERS[writer](path)
    before = path.read_bytes()

    def fail(*_: object) -> None:  # the bytes are written; the rename into place fails
        raise failure

    monkeypatch.setattr(io.os, "replace", fail)
    with pytest.raises(type(failure)):
        WRITERS[writer](path)
    assert [p.name for p in path.parent.iterdir()] == ["file"] and path.read_bytes() == before


def test_a_failed_image_store_write_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import genfair.models.images as images

    store = ImageStore(tmp_path / "blobs")
    monkeypatch.setattr(
        images.os, "replace", lambda *_: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full"))
    )
    with pytest.raises(OSError):
        store.put(b"\x89PNG not really")
    assert [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()] == []


def test_a_failed_wordnet_build_leaves_no_staging_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        wordnet.os, "replace", lambda *_: (_ for _ in ()).throw(KeyboardInterrupt())
    )
    with pytest.raises(KeyboardInterrupt):
        wordnet._write_folder(
            tmp_path / "corpora" / "wordnet", {"data.noun": b"x"}, {"source": "test"}
        )
    assert list((tmp_path / "corpora").iterdir()) == []
