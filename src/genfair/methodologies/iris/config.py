"""``methodologies.iris`` (conf/methodology/iris.yaml): :class:`IrisConfig` and its blocks. The
settings of one module's functions live beside them (:class:`~.granular.GranularConfig`,
:class:`~.tournament.TournamentConfig`, :class:`~.scoring.IrisScoringConfig`) and the
simulators' plants in :mod:`.simulated`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from genfair.limits import MAX_ATTEMPTS, MAX_RECORDS, MAX_SAMPLES, MAX_SMALL, MAX_TOKENS
from genfair.methodologies.iris.formulas import apply_presets
from genfair.methodologies.iris.granular import GranularConfig
from genfair.methodologies.iris.scoring import IrisScoringConfig
from genfair.methodologies.iris.simulated import SimulatedPlants
from genfair.methodologies.iris.tournament import TournamentConfig
from genfair.strict import Strict

__all__ = ["BisGenConfig", "BisUndConfig", "IfsGenConfig", "IfsUndConfig", "IrisConfig",
           "IrisTournamentConfig"]  # fmt: skip


class IfsGenConfig(Strict):
    #: images per occupation (paper: 160)
    images_per_occupation: int = Field(160, ge=1, le=MAX_SAMPLES)
    #: a refused image is asked again up to this many times (paper 000 §4.1's re-asking)
    max_attempts: int = Field(3, ge=1, le=MAX_ATTEMPTS)
    #: prefix ``Please generate`` (unified models that chat); plain t2i models: false
    please: bool = False


class BisGenConfig(Strict):
    #: stereotypes steered (paper: the 10 most frequent combinations)
    top: int = Field(10, ge=1, le=MAX_SMALL)
    #: paper: ~60,000 images / 10 models / (10 stereotypes x 6 prompts) = 100 (App. C.2)
    images_per_prompt: int = Field(100, ge=1, le=MAX_SAMPLES)
    max_attempts: int = Field(3, ge=1, le=MAX_ATTEMPTS)


class IfsUndConfig(Strict):
    #: ``persons.parquet`` of the curate_facet stage (None = IFS-Und not computed)
    persons: str | None = None
    #: answers per crop (paper: 1; more only makes a SIMULATOR's plant measurable on few crops)
    samples_per_crop: int = Field(1, ge=1, le=MAX_SAMPLES)
    max_crops: int | None = Field(None, ge=1, le=MAX_RECORDS)
    max_tokens: int = Field(32, ge=1, le=MAX_TOKENS)
    #: answer mapper: cosine similarity accepted in tier 2 (paper: 0.6)
    threshold: float = Field(0.6, ge=0.0, le=1.0)


class BisUndConfig(Strict):
    #: counterfactual dataset (Parquet/CSV, format of prompts.bis_und_probes); ``fixture``:
    #: the FIXTURE built from the IFS-Und crops; None = BIS-Und not computed
    dataset: str | None = None
    max_sets: int | None = Field(None, ge=1, le=MAX_RECORDS)
    max_tokens: int = Field(16, ge=1, le=MAX_TOKENS)


class IrisTournamentConfig(TournamentConfig):
    #: answer length: the answer is one occupation name
    max_tokens: int = Field(16, ge=1, le=MAX_TOKENS)


class IrisConfig(Strict):
    """``methodologies.iris`` (conf/methodology/iris.yaml)."""

    #: the versioned table of the ``map_occupations`` stage
    occupations_table: str = "data/curated/occupations/occupations.parquet"
    #: occupations used (None = every row of the table, the 52 FACET classes)
    occupations: list[str] | None = None
    #: keep only the first N occupations (sorted; smaller scales)
    max_occupations: int | None = Field(None, ge=5, le=MAX_RECORDS)
    ifs_gen: IfsGenConfig = IfsGenConfig()
    bis_gen: BisGenConfig = BisGenConfig()
    tournament: IrisTournamentConfig = IrisTournamentConfig()
    ifs_und: IfsUndConfig = IfsUndConfig()
    bis_und: BisUndConfig = BisUndConfig()
    #: the readings where the paper and the authors' code differ (iris.formulas): ``paper`` |
    #: ``authors_code``; fills the settings of ``metrics`` and ``scoring`` not given explicitly
    formulas: Literal["paper", "authors_code"] = "paper"
    #: log base of every JSD: e (the authors' code, the scale of Table 9's S and K) or 2
    jsd_base: Literal["e", "2"] = "e"
    metrics: GranularConfig = GranularConfig()
    scoring: IrisScoringConfig = IrisScoringConfig()
    simulated: SimulatedPlants = SimulatedPlants()

    @model_validator(mode="before")
    @classmethod
    def _presets(cls, data: Any) -> Any:
        return apply_presets(data)
