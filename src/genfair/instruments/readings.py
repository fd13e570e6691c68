"""Instrument readings cached like answers: each image or text is measured once per study.

A *reading* is what an instrument measured of one image or one text, as JSON (the face
instrument's :meth:`~genfair.instruments.face_demographics.FaceDemographics.read`, a
sentence's TextBlob polarity: :func:`read_texts`). It is stored in the
response cache's ``readings`` table (:meth:`~genfair.models.cache.ResponseCache.put_readings`;
the SQLite file or the team's PostgreSQL database) under :func:`reading_key`: the SHA-256 of

- the measured content's hash (an image's sha256, the image store's name for it; a text's
  sha256, :func:`text_content`),
- the instrument's name and its validated config as canonical JSON,
- its code identity (:func:`code_identity`): the source of the modules that compute the
  reading, the versions of the packages it runs and the hashes of the weights files its
  config names.

So IRIS's ``generate`` (which measures its IFS-Gen images to find BIS-Gen's stereotypes) and
``label`` share readings; a label stage killed after hours resumes with every reading it
stored (each batch of :data:`BATCH` is committed as it is measured); a rerun after a change
to a metrics setting measures nothing; a change to the instrument's config, code, packages
or weights measures again.

Oracle-mode readings (SIMULATORS read the planted truth) are never cached: they cost less
than the lookup, and their truth comes with the response, not with the pixels (a simulator's
images deduplicate to a few files carrying many different planted attributes), so a key over
the image's hash would be wrong.

The missing readings are measured by :func:`_measure_missing` through
:func:`genfair.instruments.fanout.measure_each` (this process, local worker processes or the
Dask cluster, as the active readings executor says), which needs only a picklable
:class:`InstrumentSpec` and the image paths: the instrument is rebuilt from its spec wherever
the measuring runs.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from genfair.frame import INSTRUMENTS, instrument_class, section_class
from genfair.instruments.fanout import adopt, measure_each
from genfair.io import file_sha256, stable_hash
from genfair.logs import progress

__all__ = [
    "BATCH",
    "InstrumentSpec",
    "code_identity",
    "pack_vector",
    "read_images",
    "read_in_chunks",
    "read_texts",
    "reading_key",
    "scored_once",
    "text_content",
    "unpack_vector",
]

log = logging.getLogger(__name__)

#: readings committed to the cache at a time (a killed stage loses at most this many)
BATCH = 8
#: instruments built in this process, by spec (a worker loads each instrument once)
_BUILT: dict[InstrumentSpec, Any] = {}


@dataclass(frozen=True)
class InstrumentSpec:
    """A configured instrument as data (picklable): its name and validated config as
    canonical JSON; :meth:`build` makes the instrument again, once per process."""

    name: str
    config_json: str

    @classmethod
    def of(cls, name: str, instrument: Any) -> InstrumentSpec:
        """The spec of ``instrument`` (built from ``instruments.<name>``); this process uses
        ``instrument`` for it (the latest given) rather than loading its networks again.
        ``instrument.config``: its validated pydantic config, or a mapping of JSON values (a
        text instrument's settings that change its readings)."""
        config = instrument.config
        config = config.model_dump(mode="json") if hasattr(config, "model_dump") else dict(config)
        spec = cls(name, json.dumps(config, sort_keys=True, separators=(",", ":")))
        _BUILT[spec] = instrument
        adopt(spec, instrument)
        return spec

    def build(self) -> Any:
        if self not in _BUILT:
            config = section_class(INSTRUMENTS, self.name).model_validate_json(self.config_json)
            _BUILT[self] = instrument_class(self.name)(config)
        return _BUILT[self]


def code_identity(instrument: Any) -> str:
    """The hash of what computes ``instrument``'s readings besides its config
    (``instrument.reading_identity()``: modules, packages, files): any edit to those
    modules, another package version or other weights makes new keys."""
    parts = instrument.reading_identity()
    return stable_hash(
        {
            "modules": {m: _module_hash(m) for m in parts.get("modules", ())},
            "packages": {p: _version(p) for p in parts.get("packages", ())},
            "files": [_file_hash(Path(f)) for f in parts.get("files", ())],
        }
    )


@lru_cache(maxsize=64)
def _module_hash(module: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return "absent"
    return hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


def _file_hash(path: Path) -> str:
    stat = path.stat()
    return _hash_of(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=64)
def _hash_of(path: str, size: int, mtime_ns: int) -> str:  # size, mtime: the memo's key
    return file_sha256(path)


def reading_key(content: str, spec: InstrumentSpec, code: str) -> str:
    """The cache key of the reading of ``content`` (an image's sha256) by ``spec``'s
    instrument whose code identity is ``code``."""
    return stable_hash(
        {"content": content, "instrument": spec.name, "config": spec.config_json, "code": code}
    )


def read_images(
    instrument: Any,
    name: str,
    images: Sequence[tuple[str, Path]],
    cache: Any,
    *,
    batch: int = BATCH,
    desc: str = "",
) -> list[dict[str, Any]]:
    """The readings of ``images`` (``(sha256, path)`` pairs), in order, by ``instrument``
    (configured as ``instruments.<name>``; model mode): those in ``cache`` looked up in bulk,
    the others measured once per distinct content and stored ``batch`` at a time as they
    come. ``cache``: an open :class:`~genfair.models.cache.ResponseCache`, a function that
    opens one (called only when there are images), or None (measure everything, store
    nothing)."""
    paths = [path for _, path in images]

    def measure(spec: InstrumentSpec, todo: list[int], on_result: OnResult) -> None:
        _measure_missing(spec, [paths[i] for i in todo], on_result, desc=desc)

    contents = [sha for sha, _ in images]
    problem = getattr(instrument, "reading_problem", lambda reading: None)
    return _cached(instrument, name, contents, measure, cache, batch, problem)


def read_in_chunks(
    instrument: Any,
    name: str,
    contents: Sequence[str],
    compute: Callable[[list[int]], list[dict[str, Any]]],
    cache: Any,
    *,
    chunk: int = 64,
    problem: Callable[[dict[str, Any]], str | None] = lambda reading: None,
) -> list[dict[str, Any]]:
    """The readings of ``contents`` (an image's sha256 with what else the reading depends
    on, e.g. ``<sha256>/prompt/<hash>``), in order, by an instrument that batches its
    networks: the missing ones are computed by ``compute(indices into contents)``, ``chunk``
    at a time, in this process, and each chunk is stored as it is done (``cache`` as in
    :func:`read_images`). ``problem(reading)``: why a stored reading cannot be used (it is
    dropped and computed again), or None."""

    def measure(spec: InstrumentSpec, todo: list[int], on_result: OnResult) -> None:
        for start in progress(range(0, len(todo), chunk), desc=name, unit="chunk"):
            part = todo[start : start + chunk]
            for offset, reading in enumerate(compute(part)):
                on_result(start + offset, reading)

    return _cached(instrument, name, contents, measure, cache, chunk, problem)


def pack_vector(vector: Any) -> str:
    """A vector as a reading holds it: its float32 bytes in base64 (exact, and a quarter
    the size of JSON numbers)."""
    import numpy as np

    return base64.b64encode(np.ascontiguousarray(vector, np.float32).tobytes()).decode()


def unpack_vector(packed: str) -> Any:
    """The float32 vector :func:`pack_vector` packed (ValueError, TypeError: not one)."""
    import numpy as np

    return np.frombuffer(base64.b64decode(packed, validate=True), dtype=np.float32)


def text_content(text: str) -> str:
    """The content hash of a text: the sha256 of its exact UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def read_texts(
    instrument: Any,
    name: str,
    texts: Sequence[str],
    compute: Callable[[list[str]], list[dict[str, Any]]],
    cache: Any,
    *,
    chunk: int = 512,
    problem: Callable[[dict[str, Any]], str | None] = lambda reading: None,
) -> list[dict[str, Any]]:
    """The readings of ``texts``, in order, by a text instrument (its ``config`` and
    ``reading_identity()`` as an image instrument's): keyed by each exact text's sha256
    (:func:`text_content`), the missing ones computed by ``compute(distinct texts)``,
    ``chunk`` at a time, and stored as each chunk is done (:func:`read_in_chunks`)."""
    texts = list(texts)
    contents = [text_content(text) for text in texts]
    return read_in_chunks(
        instrument,
        name,
        contents,
        lambda todo: compute([texts[i] for i in todo]),
        cache,
        chunk=chunk,
        problem=problem,
    )


class CachedScores:
    """``scorer`` (``score(texts) -> array``, one number per text) with each text's score a
    reading (:func:`read_texts`, ``{"score": <number>}``, stored as
    ``scorer.reading_name``), returned in ``scorer.dtype`` (default float64) so the array
    is the one the scorer returns: JSON keeps a float's exact value."""

    def __init__(self, scorer: Any, cache: Any) -> None:
        self.scorer, self.cache = scorer, cache
        self.name = scorer.name  # what results record as the instrument that ran
        self.fallback_reason = getattr(scorer, "fallback_reason", None)

    def score(self, texts: Sequence[str]) -> Any:
        import numpy as np

        dtype = getattr(self.scorer, "dtype", np.float64)
        found = read_texts(
            self.scorer,
            self.scorer.reading_name,
            texts,
            lambda todo: [{"score": float(v)} for v in self.scorer.score(todo)],
            self.cache,
            problem=_not_a_score,
        )
        return np.array([reading["score"] for reading in found], dtype=dtype)


def _not_a_score(reading: dict[str, Any]) -> str | None:
    score = reading.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float):
        return f"score is {score!r}, not a number"
    return None


def scored_once(scorer: Any, cache: Any) -> Any:
    """``scorer`` with its scores cached in ``cache`` (:class:`CachedScores`) when it costs
    more than a lookup (it names its readings: ``reading_name``) and there is a cache (an
    open store or an opener); else ``scorer`` itself, as it was."""
    if cache is None or getattr(scorer, "reading_name", None) is None:
        return scorer
    return CachedScores(scorer, cache)


OnResult = Callable[[int, dict[str, Any]], None]


def _cached(
    instrument: Any,
    name: str,
    contents: Sequence[str],
    measure: Callable[[InstrumentSpec, list[int], OnResult], None],
    cache: Any,
    batch: int,
    problem: Callable[[dict[str, Any]], str | None],
) -> list[dict[str, Any]]:
    """The readings of ``contents`` in order: looked up in ``cache``, the missing ones (once
    per distinct content) measured by ``measure(spec, their indices, on_result)``, which
    hands each reading on as it exists (``on_result(position among those indices, reading)``)
    to be stored ``batch`` at a time. A stored reading with a ``problem`` (written by hand,
    or damaged) is deleted and measured again."""
    if not contents:
        return []
    spec = InstrumentSpec.of(name, instrument)
    code = code_identity(instrument)
    keys = [reading_key(content, spec, code) for content in contents]
    first: dict[str, int] = {}  # each distinct key's first position
    for index, key in enumerate(keys):
        first.setdefault(key, index)
    with _opened(cache) as store:
        found = store.get_readings(list(first)) if store is not None else {}
        bad = {k: why for k, r in found.items() if (why := problem(r)) is not None}
        if bad:
            for key, why in bad.items():
                log.warning(
                    "%s: dropped malformed reading %s (%s); measuring again", name, key[:12], why
                )
                del found[key]
            store.drop_readings(list(bad))
        missing = [k for k in first if k not in found]
        log.info(
            "%s: %d readings cached, %d to measure", name, len(first) - len(missing), len(missing)
        )
        pending: list[tuple[str, str, dict[str, Any]]] = []

        def on_result(index: int, reading: dict[str, Any]) -> None:
            found[missing[index]] = reading
            pending.append((missing[index], name, reading))
            if store is not None and len(pending) >= batch:
                store.put_readings(pending)
                pending.clear()

        try:
            measure(spec, [first[k] for k in missing], on_result)
        finally:  # a failure keeps every reading measured before it
            if store is not None:
                store.put_readings(pending)
    return [found[k] for k in keys]


def _measure_missing(
    spec: InstrumentSpec,
    paths: Sequence[Path],
    on_result: Callable[[int, dict[str, Any]], None],
    *,
    desc: str = "",
) -> None:
    """Measure each of ``paths`` with ``spec``'s instrument, handing ``on_result(index,
    reading)`` each reading as soon as it exists, wherever the active readings executor runs
    them (:func:`genfair.instruments.fanout.measure_each`: this process, local worker
    processes or the Dask cluster)."""
    if not paths:
        return
    bar = progress(total=len(paths), desc=desc or spec.name, unit="image")

    def counted(index: int, reading: dict[str, Any]) -> None:
        on_result(index, reading)
        bar.update(1)

    try:
        measure_each(spec, [str(path) for path in paths], counted)
    finally:
        bar.close()


@contextmanager
def _opened(cache: Any) -> Iterator[Any]:
    """``cache`` opened for the block: as given when it is a store (or None), else the
    store its opener returns, closed after."""
    if cache is None or hasattr(cache, "get_readings"):
        with nullcontext(cache) as store:
            yield store
        return
    with cache() as store:
        yield store
