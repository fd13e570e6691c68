"""Where each stage's outputs live (DESIGN.md's data layout), under one root.

A run's outputs (responses, labels, metrics) are filed by methodology first
(``data/<kind>/<methodology>/<model>``), so ``study@<methodology>``, which reads every model's
labels and metrics of its methodology, depends on its methodology's folders alone
(``data/labels/<methodology>``, ``data/metrics/<methodology>``): a change to one methodology
reruns no other methodology's study step.

Every path built from a name (model, methodology, table...) takes only names that match
:data:`genfair.names.NAME_PATTERN` and is checked to stay under the root, whatever the
caller was handed (a stage's argument, ``genfair try``'s, a methodology's table name).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from genfair.names import INSTRUMENTS_FOLDER, check_name, inside


@dataclass(frozen=True)
class Layout:
    """Paths of a study's outputs: the repository for ``dvc repro``, a scratch folder for
    ``genfair try``."""

    root: Path = Path(".")

    @property
    def data(self) -> Path:
        return self.root / "data"

    def named(self, folder: Path, *names: str, suffix: str = "") -> Path:
        """``folder/<name>/.../<last name><suffix>``: each part checked to be a name, the
        whole to stay under the root (:class:`~genfair.errors.ConfigError` otherwise)."""
        for name in names:
            check_name(name, f"output name under {folder}")
        path = folder.joinpath(*names[:-1], names[-1] + suffix) if names else folder
        return inside(self.root, path)

    def probes(self, methodology: str) -> Path:
        return self.named(self.data / "probes", methodology, suffix=".parquet")

    def responses_dir(self, model: str, methodology: str) -> Path:
        """``generate@<model>-<methodology>``'s output folder."""
        return self.named(self.data / "responses", methodology, model)

    def responses(self, model: str, methodology: str) -> Path:
        return self.responses_dir(model, methodology) / "responses.parquet"

    def run_params(self, model: str, methodology: str) -> Path:
        """The study's params that ``generate@<model>-<methodology>`` ran with; its label and
        metrics steps read them (:func:`genfair.study.steps.recorded_params`)."""
        return self.responses_dir(model, methodology) / "run_params.json"

    def usage(self, model: str, methodology: str) -> Path:
        """The tokens and images of the run's answers (:mod:`genfair.models.usage`)."""
        return self.responses_dir(model, methodology) / "usage.json"

    def images(self, model: str, methodology: str) -> Path:
        """A t2i model's images (``<sha256>.png``), indexed by :meth:`responses`."""
        return self.responses_dir(model, methodology) / "images"

    def labels(self, model: str, methodology: str) -> Path:
        return self.named(self.data / "labels", methodology, model, suffix=".parquet")

    def metrics(self, model: str, methodology: str) -> Path:
        """``metrics@<model>-<methodology>``'s folder: ``scores.parquet``, detail tables,
        ``summary.json``."""
        return self.named(self.data / "metrics", methodology, model)

    @property
    def instruments(self) -> Path:
        """``validate_instruments``' outputs, beside the methodologies' metrics folders (so no
        methodology is named ``instruments``: :data:`genfair.names.INSTRUMENTS_FOLDER`):
        ``<instrument>/`` (tables) and ``<instrument>.json`` (summary) each."""
        return self.data / "metrics" / INSTRUMENTS_FOLDER

    def usages(self) -> list[tuple[str, str, Path]]:
        """Every run's ``usage.json`` found: (model, methodology, path), by methodology then
        model."""
        found = sorted((self.data / "responses").glob("*/*/usage.json"))
        return [(path.parent.name, path.parent.parent.name, path) for path in found]

    def code(self, methodology: str) -> Path:
        """``code@<methodology>``'s content fingerprint of the methodology's code."""
        return self.named(self.data / "code", methodology, suffix=".json")

    def study(self, methodology: str) -> Path:
        """``study@<methodology>``'s folder: its tables, ``summary.json``, ``params.json``."""
        return self.named(self.data / "study", methodology)

    @property
    def scores(self) -> Path:
        """The leaderboards (``<methodology>.parquet``)."""
        return self.data / "scores"

    @property
    def headline(self) -> Path:
        """The headline metrics of every model and methodology (``dvc metrics show``)."""
        return self.data / "headline.json"

    @property
    def comparisons(self) -> Path:
        """Paired model comparisons of every headline number (:mod:`genfair.study.compare`)."""
        return self.data / "comparisons.json"

    @property
    def precision(self) -> Path:
        """Each headline's half-width forecast at the paper's size (:mod:`genfair.study.precision`,
        the ``precision`` stage; the report and MLflow read it)."""
        return self.data / "precision.json"

    @property
    def headline_dir(self) -> Path:
        """One file per headline number (``<methodology>/<name>.<better>.json``: model ->
        value), what ``dvc metrics show`` prints."""
        return self.data / "headline"

    @property
    def plots(self) -> Path:
        """``dvc plots`` tables (``<methodology>/<name>.csv``)."""
        return self.data / "plots"

    @property
    def report(self) -> Path:
        """The study report (``index.html``)."""
        return self.data / "report" / "index.html"

    def curated(self, name: str) -> Path:
        return self.named(self.data / "curated", name, suffix=".parquet")

    @property
    def tracking(self) -> Path:
        return self.data / "tracking" / "runs.json"

    @property
    def tracking_store(self) -> Path:
        return self.data / "tracking" / "store.json"
