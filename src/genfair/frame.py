"""``params.yaml``: reading it, and the study's frame.

The frame is every block of the study validated but the model configs, which it keeps as
written: the stages that run on every ``dvc repro`` (curation input fingerprints, the MLflow
store check) read only the frame, so they start without importing the model layer (a third
of a second each, every repro). :mod:`genfair.study_params` adds the validated model configs and
the methodologies' own configs on top of it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from genfair.errors import ConfigError, NotConfigured
from genfair.io import stable_hash
from genfair.limits import MAX_CALLS
from genfair.logs import printable
from genfair.names import INSTRUMENTS_FOLDER, PARAMS_FILE, name_problem, pair_problem
from genfair.strict import Strict
from genfair.urls import checked_url, strip_in_text
from genfair.yaml_guard import read_yaml

__all__ = ["CURATION", "EXECUTION", "EXP_RESTORE", "INSTRUMENTS", "INSTRUMENT_CLASSES",
           "PARAMS_FILE", "CacheConfig", "ConfigError", "GenerationConfig", "StudyFrame",
           "TrackingConfig", "cache_dir", "cache_url", "images_url", "curation_config",
           "format_errors", "instrument_class", "instrument_config", "load_frame", "read_params",
           "section_class", "usage_ledger", "validate"]  # fmt: skip

#: what puts the workspace back after a failed `dvc exp run -S` (DVC writes params.yaml and
#: removes the outputs of the stages it reruns before the first stage fails)
EXP_RESTORE = f"git checkout {PARAMS_FILE} && dvc checkout"


class CacheConfig(Strict):
    """``cache``: where call results live. ``url`` names the response store (None: the SQLite
    file ``<dir>/responses.sqlite``), ``images`` the blob store of generated images (None:
    ``<dir>/images``; any fsspec URL, e.g. ``s3://bucket/images``); ``dir`` holds local caches
    and a remote image store's local copies. No credentials here: they come from the
    environment (``PGPASSWORD`` / ``~/.pgpass``, ``AWS_*``)."""

    dir: str = ".genfair/cache"
    url: str | None = None
    images: str | None = None

    @field_validator("url")
    @classmethod
    def _store(cls, value: str | None) -> str | None:
        if value is None:
            return value
        scheme = value.split("://", 1)[0] if "://" in value else ""
        if scheme not in CACHE_SCHEMES:
            raise ValueError(
                f"{strip_in_text(value)!r} is not a response store URL: use "
                "sqlite:///path/responses.sqlite or postgresql://host/db"
            )
        return _no_credentials(value)

    @field_validator("images")
    @classmethod
    def _blobs(cls, value: str | None) -> str | None:
        return None if value is None else _no_credentials(value)


#: the URL schemes of a response store (SQLAlchemy's names)
CACHE_SCHEMES = ("sqlite", "postgresql", "postgresql+psycopg")


def _no_credentials(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if sep and ":" in rest.split("/", 1)[0].rpartition("@")[0]:
        raise ValueError(
            f"{strip_in_text(url)!r}: a password in a URL would be stored "
            "in params.yaml, dvc.lock and MLflow; remove it and set "
            "PGPASSWORD or ~/.pgpass (PostgreSQL) or AWS_* (S3) instead"
        )
    return url


def cache_url(cache: CacheConfig) -> str:
    """The response store's URL: ``GENFAIR_CACHE_URL`` if set, else ``cache.url``, else the
    SQLite file in the cache folder."""
    return (
        os.environ.get("GENFAIR_CACHE_URL")
        or cache.url
        or f"sqlite:///{(cache_dir(cache.dir) / 'responses.sqlite').resolve()}"
    )


def images_url(cache: CacheConfig) -> str:
    """The image store: ``GENFAIR_IMAGES_URL`` if set, else ``cache.images``, else the
    ``images`` folder in the cache folder."""
    return (
        os.environ.get("GENFAIR_IMAGES_URL")
        or cache.images
        or str((cache_dir(cache.dir) / "images").resolve())
    )


class TrackingConfig(Strict):
    experiment: str = "genfair"
    #: MLFLOW_TRACKING_URI overrides; None = SQLite store in the repository root
    uri: str | None = None

    @field_validator("uri")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        """Any scheme MLflow takes; http(s) with a host and port; no credential (it would be
        stored in params.yaml and dvc.lock: the environment gives them)."""
        return value if value is None else checked_url(value, schemes=None)


class GenerationConfig(Strict):
    """``generation``: when a ``generate`` stage counts as done, and where its calls run."""

    #: the share of calls that may end in ``error`` (transport failures after retries) before
    #: the stage fails; errors are never cached, so a rerun asks only them again
    max_error_rate: float = Field(0.0, ge=0.0, le=1.0)
    #: where uncached calls run: ``local`` (this process) or ``dask`` (a Dask distributed
    #: cluster, :mod:`genfair.models.dask_executor`). Where, not what: no output depends on it
    #: (:data:`EXECUTION`), so switching it reruns nothing
    executor: Literal["local", "dask"] = "local"
    #: the Dask scheduler's address (``tcp://host:8786``); None: ``DASK_SCHEDULER_ADDRESS``
    scheduler: str | None = Field(None, pattern=r"^(tcp|tls|inproc|ucx|ws|wss)://\S+$")
    #: local processes that read images (the instruments' readings, ``label``) when
    #: ``executor`` is ``local``: 1 reads in the stage's own process, on the instrument's
    #: own threads; more start that many worker processes, each loading the instrument once
    #: (:mod:`genfair.instruments.fanout`; docs/benchmarks.md, "Readings: processes, threads
    #: and Dask"). Where, not what: no reading depends on it
    instrument_workers: int = Field(1, ge=1, le=256)
    #: the most calls still to send (``genfair plan``) a ``generate`` stage lets the study
    #: pay; None: no limit. Checked over the whole study before any call
    max_calls: int | None = Field(None, ge=0, le=MAX_CALLS)
    #: the most estimated cost of the calls still to send (models' ``price``); None: no limit
    max_cost: float | None = Field(None, ge=0.0)
    #: the most gigabytes (10^9 bytes) the images still to draw may take (``genfair plan``'s
    #: image GB); None: no limit
    max_disk_gb: float | None = Field(None, gt=0.0, allow_inf_nan=False)


#: the keys of ``generation`` that say where calls run or how many may be paid, not what
#: they answer: outside ``generate``'s DVC params and its recorded ``run_params.json``
EXECUTION = ("executor", "scheduler", "instrument_workers", "max_calls", "max_cost", "max_disk_gb")


def cache_dir(configured: str | os.PathLike[str]) -> Path:
    """The cache folder: ``GENFAIR_CACHE_DIR`` if set, else the configured one."""
    return Path(os.environ.get("GENFAIR_CACHE_DIR") or configured)


def usage_ledger(cache: CacheConfig) -> Path:
    """The ledger of each generate's cache/sent split (:mod:`genfair.models.usage`): in the
    cache folder, whatever the response store (a PostgreSQL store's ledger stays local)."""
    return cache_dir(cache.dir) / "usage.jsonl"


class StudyFrame(Strict):
    """The study's blocks; ``models`` as written (:class:`genfair.study_params.StudyParams`
    validates each model config)."""

    # a key pasted where a variable name belongs must never be echoed in an error
    model_config = ConfigDict(hide_input_in_errors=True)

    seed: int
    scale: str
    generation: GenerationConfig = GenerationConfig()
    cache: CacheConfig = CacheConfig()
    tracking: TrackingConfig = TrackingConfig()
    models: dict[str, dict[str, Any]] = Field(min_length=1)
    #: validated per methodology by :func:`genfair.study_params.methodology_config`
    methodologies: dict[str, dict[str, Any]] = Field(min_length=1)
    #: a model on some methodologies only (``conf/study.yaml``): model -> the methodologies it
    #: runs; a model not named runs every one that measures its modality
    #: (:func:`genfair.study_params.check_model_methodologies`)
    model_methodologies: dict[str, list[str]] = {}
    #: dataset curation steps (``news``...), validated by :func:`curation_config`
    curation: dict[str, dict[str, Any]] = {}
    #: measuring instruments (``face_demographics``...), validated by :func:`instrument_config`
    instruments: dict[str, dict[str, Any]] = {}
    #: every (model, methodology) pair the study measures, ``<model>-<methodology>`` -> both
    #: names and ``reads`` (hashes of the other models the run reads); composed from
    #: ``models`` and ``methodologies`` (:mod:`genfair.study.runs`)
    runs: dict[str, dict[str, Any]] | None = None
    #: methodology -> the path of its code (its stages' dependency), composed
    methodology_code: dict[str, str | None] | None = None
    #: the same, for the methodologies some model of the study runs (study stages), composed
    study_steps: dict[str, str | None] | None = None
    #: ``<methodology>-<plot>`` -> a ``dvc plots`` figure the methodologies declare, composed
    plots: dict[str, dict[str, Any]] | None = None
    #: methodology -> the sizes it runs at (``conf/sizes/<methodology>/<sizes>.yaml``: the
    #: scale's unless picked apart; ``custom``: set by override), composed
    sizes: dict[str, str | None] | None = None
    #: ``<section>-<name>`` -> a curation input outside the repository (``section``, ``path``),
    #: composed (:func:`genfair.curation.inputs.external_inputs`): a DVC dependency each
    external_inputs: dict[str, dict[str, str]] | None = None
    #: a content digest of each model config, each methodology config and the instruments
    #: (:func:`digests_for`), composed: the stages' params dependencies (not the blocks
    #: themselves, which DVC would copy into ``dvc.lock`` for every stage that reads them)
    digests: dict[str, Any] | None = None

    def sizes_of(self, methodology: str) -> str:
        """The sizes ``methodology`` runs at: its entry of ``sizes`` (``none`` for a
        methodology without sizes files), else the study's scale (a ``params.yaml`` composed
        before ``sizes`` was)."""
        if self.sizes is None or methodology not in self.sizes:
            return self.scale
        return self.sizes[methodology] or "none"

    @field_validator("scale", mode="before")
    @classmethod
    def _scale_is_a_name(cls, value: Any) -> Any:
        return _named(value)

    @field_validator(
        "models",
        "methodologies",
        "model_methodologies",
        "curation",
        "instruments",
        "runs",
        "study_steps",
        "external_inputs",
        "sizes",
        mode="before",
    )
    @classmethod
    def _keys_are_names(cls, value: Any) -> Any:
        """Every key becomes a folder, a stage name, a word of a stage's shell command or an
        MLflow run name (:mod:`genfair.names`); so do the names a run entry holds."""
        if isinstance(value, dict):
            for key, entry in value.items():
                _named(key)
                if isinstance(entry, dict):
                    for field in ("model", "methodology"):
                        if field in entry and not isinstance(entry[field], dict):
                            _named(entry[field], f"{key}.{field}: ")
        return value

    @field_validator("models")
    @classmethod
    def _pairs_stay_apart(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in value:
            problem = pair_problem(key)
            if problem:
                raise PydanticCustomError("name", "{problem}", {"problem": problem})
        return value

    @field_validator("methodologies")
    @classmethod
    def _not_the_instruments_folder(cls, value: dict[str, Any]) -> dict[str, Any]:
        if INSTRUMENTS_FOLDER in value:
            raise PydanticCustomError(
                "name",
                "'{name}' is the instruments' folder beside the methodologies' (data/metrics/, "
                "data/headline/): name the methodology otherwise",
                {"name": INSTRUMENTS_FOLDER},
            )
        return value


def digests_for(
    models: dict[str, Any],
    methodologies: dict[str, Any],
    instruments: dict[str, Any],
    fields: Callable[[str], Mapping[str, Sequence[str] | None]] | None = None,
) -> dict[str, Any]:
    """``params.yaml``'s ``digests``: a content hash of each model config, each methodology
    config and the instruments block, as composed. Stages depend on these instead of the blocks:
    DVC rewrites the whole ``dvc.lock`` after each stage, and the blocks copied into it for
    every stage that reads them made up more than half of its lines (and of DVC's time per
    stage, docs/architecture.md).

    A methodology's digest is ``all`` (its whole block: what the study-level stages read) and,
    with ``fields`` (name -> step -> the fields the step reads, None: all;
    :func:`genfair.methodologies.reads.fields_of`), one per step over its own fields: each
    per-run stage depends on its step's alone."""

    return {
        # a simulator's own plants are not the model's: each run's ``runs`` entry digests
        # those it answers with, so editing one reruns that run alone
        "models": {name: stable_hash(_without_plants(block), 16) for name, block in models.items()},
        "methodologies": {
            name: methodology_digests(block, fields(name) if fields else {})
            for name, block in methodologies.items()
        },
        "instruments": stable_hash(instruments, 16),
    }


def _without_plants(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "plants"} if isinstance(block, dict) else block


def methodology_digests(block: Any, steps: Mapping[str, Sequence[str] | None]) -> dict[str, str]:
    """A methodology block's digests: ``all``, and one per step of ``steps`` over the fields
    it names (None: all of them)."""

    if not isinstance(block, dict):
        return {"all": stable_hash(block, 16)}
    return {
        "all": stable_hash(block, 16),
        **{
            step: stable_hash(
                block if keys is None else {k: block[k] for k in keys if k in block}, 16
            )
            for step, keys in steps.items()
        },
    }


def _stale_digests(written: Any, expected: Any, key: str = "digests") -> list[str]:
    """The keys under ``key`` whose written value is not the ``expected`` one: a methodology
    is named once (its keys ``expected`` lacks are not compared: the frame checks ``all``)."""
    if key.startswith("digests.methodologies.") and isinstance(expected, dict):
        written = written if isinstance(written, dict) else {}
        return [key] if any(written.get(k) != v for k, v in expected.items()) else []
    if not isinstance(expected, dict):
        return [] if written == expected else [key]
    written = written if isinstance(written, dict) else {}
    return [
        stale
        for k in [*expected, *(k for k in written if k not in expected)]
        for stale in _stale_digests(written.get(k), expected.get(k), f"{key}.{k}")
    ]


def _named(value: Any, where: str = "") -> Any:
    """``value`` if it is a name, else a validation error quoting it (one line)."""
    problem = name_problem(value)
    if problem:
        raise PydanticCustomError("name", "{where}{problem}", {"where": where, "problem": problem})
    return value


#: discriminator fields of tagged unions -> the tag pydantic uses when the field is absent
#: (a simulator policy without ``kind`` is a multiple-choice policy)
_TAG_FIELDS: dict[str, str | None] = {"modality": "llm", "backend": None, "kind": "choice"}


def _key_path(loc: tuple[str | int, ...], data: Any) -> list[str | int]:
    """``loc`` without the tags pydantic inserts for tagged unions (``models.x.embedded.y``
    -> ``models.x.y``): a part that is not a key of the input dict but is the value of one
    of its :data:`_TAG_FIELDS` (or that field's default) is a tag, not a key the user
    wrote."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if (
            isinstance(node, dict)
            and part not in node
            and any(node.get(f, default) == part for f, default in _TAG_FIELDS.items())
        ):
            continue
        path.append(part)
        try:
            node = node[part]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            node = None
    return path


def format_errors(
    error: ValidationError, source: str, prefix: tuple[str | int, ...] = (), data: Any = None
) -> str:
    """One line per problem: ``<source>: <key.path>: <message>``.

    ``data`` is the validated input; when given, union tags are dropped from key paths.
    """
    lines = []
    for item in error.errors():
        loc = ".".join(str(p) for p in (*prefix, *_key_path(item["loc"], data)))
        message = (
            "unknown key (check its spelling)" if item["type"] == "extra_forbidden" else item["msg"]
        )
        lines.append(printable(f"{source}: {loc}: {message}"))
    return "invalid configuration:\n  " + "\n  ".join(lines)


def read_params(path: str | Path = PARAMS_FILE) -> dict[str, Any]:
    """The parsed YAML of ``path``; :class:`ConfigError` when it is missing, not YAML or holds
    an alias (:mod:`genfair.yaml_guard`)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path} not found: run from the repository root, or `genfair compose`")
    try:
        raw = read_yaml(path) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    return raw


def check_digests(
    raw: Any,
    source: str | Path = PARAMS_FILE,
    fields: Callable[[str], Mapping[str, Sequence[str] | None]] | None = None,
) -> None:
    """Fail unless ``raw``'s ``digests`` (where it has them) are those of its blocks. A stage
    reruns when its digests change, so a ``params.yaml`` edited by hand (a block changed, its
    digest not) would leave its stages wrongly up to date. Without ``fields``
    (:func:`digests_for`), a methodology's ``all`` digest alone is checked."""
    if not isinstance(raw, dict) or raw.get("digests") is None:
        return
    expected = digests_for(
        raw.get("models") or {},
        raw.get("methodologies") or {},
        raw.get("instruments") or {},
        fields,
    )
    stale = _stale_digests(raw["digests"], expected)
    if stale:
        raise ConfigError(
            f"{source}: {', '.join(stale)} do not follow the blocks they digest: {source} was "
            "edited by hand; edit conf/ and recompose it with `genfair compose` (or "
            "`make compose`)"
        )


def validate(model: type[Any], raw: dict[str, Any], source: str = PARAMS_FILE) -> Any:
    """``raw`` validated as ``model``; :class:`ConfigError` names every bad key."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, source, data=raw)) from None


def load_frame(path: str | Path = PARAMS_FILE) -> StudyFrame:
    """The study's frame from ``path`` (model configs not validated)."""
    raw = read_params(path)
    frame = validate(StudyFrame, raw, str(path))
    check_digests(raw, path)
    return frame


#: curation step -> "module:Config class" of its configuration
CURATION = {
    "news": "genfair.curation.config:NewsCollectionConfig",
    "facet": "genfair.curation.config:FacetConfig",
    "occupations": "genfair.curation.config:OccupationsConfig",
}

#: instrument -> "module:Config class" of its configuration; the instrument is the class
#: named in :data:`INSTRUMENT_CLASSES`
INSTRUMENTS = {
    "face_demographics": "genfair.instruments.face_demographics:FaceDemographicsConfig",
    "image_quality": "genfair.instruments.image_quality:ImageQualityConfig",
    "image_semantics": "genfair.instruments.image_semantics:ImageSemanticsConfig",
}
INSTRUMENT_CLASSES = {
    "face_demographics": "genfair.instruments.face_demographics:FaceDemographics",
    "image_quality": "genfair.instruments.image_quality:ImageQuality",
    "image_semantics": "genfair.instruments.image_semantics:ImageSemantics",
}


def curation_config(params: StudyFrame, name: str, source: str = PARAMS_FILE) -> Any:
    """The validated config object of curation step ``name`` (``curation.<name>``)."""
    return _section_config(params.curation, CURATION, "curation", "curation step", name, source)


def instrument_config(params: StudyFrame, name: str, source: str = PARAMS_FILE) -> Any:
    """The validated config object of instrument ``name`` (``instruments.<name>``)."""
    return _section_config(
        params.instruments, INSTRUMENTS, "instruments", "instrument", name, source
    )


def instrument_class(name: str) -> Any:
    """The class of instrument ``name`` (built with its validated config)."""
    from importlib import import_module

    module, cls = INSTRUMENT_CLASSES[name].split(":")
    return getattr(import_module(module), cls)


def section_class(registry: dict[str, str], name: str) -> Any:
    """The config class ``registry[name]`` names (``"module:Class"``, imported on demand)."""
    from importlib import import_module

    module, cls = registry[name].split(":")
    return getattr(import_module(module), cls)


def _section_config(
    blocks: dict[str, dict[str, Any]],
    registry: dict[str, str],
    section: str,
    what: str,
    name: str,
    source: str,
) -> Any:
    """Validate ``<section>.<name>`` with the config class ``registry[name]`` names; errors
    name the key and the fix (the conf/ group that composes it)."""
    group = {"curation": "curation", "instruments": "instrument"}[section]
    if name not in registry:
        raise ConfigError(
            f"{source}: {section}.{name}: unknown {what}; known: {', '.join(registry)}"
        )
    if name not in blocks:
        raise NotConfigured(
            f"{source}: {section}.{name}: not configured (add "
            f"`{group}@{section}.{name}: <file>` to conf/config.yaml's defaults)"
        )
    try:
        return section_class(registry, name).model_validate(blocks[name])
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, source, (section, name), data=blocks[name])) from None
