"""WordNet 3.0 for NLTK, offline.

NLTK reads WordNet from ``<nltk_data>/corpora/wordnet/`` and normally fills it with
``nltk.download``, which needs the internet at run time. No maintained PyPI package ships the
NLTK-readable WordNet 3.0 files, so genfair takes them from Debian's ``wordnet-base`` and
``wordnet-sense-index`` packages (``/usr/share/wordnet``; ``scripts/install_wordnet.sh``
installs them and is idempotent) and builds an nltk_data folder from them:

- the data/index/exception files are *copied* (NLTK's reader does not need symlinks, but a
  copy survives the Debian package being removed or upgraded under a cached folder);
- ``lexnames`` (lexicographer file numbers, from the wndb(5) manual page) is written here,
  because the Debian packages lack it and NLTK refuses to open WordNet without it.

Where no Debian files exist but NLTK already finds a WordNet of its own (e.g. after an
``nltk.download('wordnet')`` on a machine with internet), that one is used. Otherwise
:func:`ensure_wordnet` raises an error naming the setup command.

The folder lives in ``$GENFAIR_NLTK_DATA`` or ``~/.cache/genfair/nltk_data``;
``$GENFAIR_WORDNET_DIR`` overrides the Debian source folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from functools import lru_cache
from pathlib import Path

from nltk.corpus.reader.wordnet import WordNetCorpusReader

__all__ = [
    "SETUP_COMMAND",
    "WordNetMissing",
    "ensure_wordnet",
    "load_wordnet",
    "nltk_data_dir",
    "register",
]

SETUP_COMMAND = "bash scripts/install_wordnet.sh  (as root; `make setup` runs it)"
DEBIAN_DIR = Path("/usr/share/wordnet")
# What NLTK's WordNetCorpusReader opens (data/index per part of speech, exceptions for
# morphy, index.sense for sense keys) plus lexnames, which we write.
_FILES = tuple(
    f"{kind}.{pos}" for pos in ("noun", "verb", "adj", "adv") for kind in ("data", "index")
) + ("noun.exc", "verb.exc", "adj.exc", "adv.exc", "index.sense")
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


class WordNetMissing(RuntimeError):
    """No WordNet 3.0 database is installed where genfair looks for one."""


def lexnames_text() -> str:
    """The ``lexnames`` file: ``NN<TAB>name<TAB>pos-number`` per lexicographer file (wndb(5))."""
    return "".join(
        f"{i:02d}\t{name}\t{_POS_NUMBER[name.split('.')[0]]}\n" for i, name in enumerate(_LEXNAMES)
    )


def nltk_data_dir() -> Path:
    """Where genfair's nltk_data folder lives (created by :func:`ensure_wordnet`)."""
    configured = os.environ.get("GENFAIR_NLTK_DATA")
    return Path(configured) if configured else Path.home() / ".cache" / "genfair" / "nltk_data"


def _complete(folder: Path) -> bool:
    return all(
        (folder / name).is_file() and (folder / name).stat().st_size > 0
        for name in (*_FILES, "lexnames")
    )


def _source_dir() -> Path:
    return Path(os.environ.get("GENFAIR_WORDNET_DIR") or DEBIAN_DIR)


def _nltk_own_wordnet() -> Path | None:
    """The nltk_data root of a WordNet that NLTK itself already finds (unzipped), if any."""
    import nltk.data

    for root in nltk.data.path:
        folder = Path(root) / "corpora" / "wordnet"
        if _complete(folder):
            return Path(root)
    return None


def ensure_wordnet() -> Path:
    """Return an nltk_data root holding ``corpora/wordnet``, building it if needed.

    Order: genfair's folder if already built; else build it from the Debian files; else a
    WordNet NLTK already finds; else :class:`WordNetMissing` naming the setup command.
    """
    root = nltk_data_dir()
    target = root / "corpora" / "wordnet"
    if _complete(target):
        return root
    source = _source_dir()
    missing = [name for name in _FILES if not (source / name).is_file()]
    if not missing:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Build beside the target, then rename: a concurrent or killed build never leaves a
        # half-copied folder that looks complete.
        staging = Path(tempfile.mkdtemp(prefix=".wordnet.", dir=target.parent))
        try:
            for name in _FILES:
                shutil.copyfile(source / name, staging / name)
            (staging / "lexnames").write_text(lexnames_text(), encoding="ascii")
            if target.exists():
                shutil.rmtree(target)
            os.replace(staging, target)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not _complete(target):  # another process may have won the race
                raise
        return root
    own = _nltk_own_wordnet()
    if own is not None:
        return own
    raise WordNetMissing(
        f"WordNet 3.0 not found: {source} lacks {', '.join(missing)} and NLTK has no "
        f"unzipped corpora/wordnet on its path. Install it with: {SETUP_COMMAND}; or set "
        "GENFAIR_WORDNET_DIR to a folder with the WordNet 3.0 dict files, or GENFAIR_NLTK_DATA "
        "to an nltk_data folder holding corpora/wordnet."
    )


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
    """An NLTK WordNet reader on the offline database; never downloads."""
    root = ensure_wordnet()
    register(root)
    return _reader(str(root / "corpora" / "wordnet"))
