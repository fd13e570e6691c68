"""The IRIS study step (``study@iris``): partial flags in every table and the summary entry,
Fig. 4(c)/(d) tables from model architectures, the oracle-floor table, the Fig. 4(c) figure."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from genfair.methodologies.base import ModelInfo, ModelRun, StudyContext
from genfair.methodologies.iris.figures import study_figures
from genfair.methodologies.iris.granular import COLUMNS, GRANULAR_METRICS
from genfair.methodologies.iris.scoring import IrisScoringConfig
from genfair.methodologies.iris.study import score_study


@dataclass(frozen=True)
class _Info(ModelInfo):
    """ModelInfo with the model config's ``architecture`` (wired by the study layer)."""

    architecture: str | None = None


def _granular(
    level: float, sectors: set[str] | None = None, drop: tuple[str, ...] = ()
) -> pd.DataFrame:
    rows = []
    for s in GRANULAR_METRICS:
        if sectors is not None and s.sector not in sectors:
            continue
        value = math.nan if s.name.startswith(drop) else (level if s.bounded else math.expm1(level))
        rows.append(
            {
                "sector": s.sector,
                "metric": s.name,
                "core": s.core,
                "attributes": "",
                "region": s.region,
                "group": s.group,
                "value": value,
                "bounded": s.bounded,
                "max_value": s.max_value,
                "norm_divisor": s.norm_divisor,
                "deviation": value,
                "n": 1,
                "note": "",
                "oracle_floor": 0.01 if s.core == "M5" else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def _ctx(models: dict[str, tuple[pd.DataFrame, str | None]]) -> StudyContext:
    runs = tuple(
        ModelRun(
            model=_Info(
                name=name, modality="vlm", backend="simulated", simulated=True, architecture=arch
            ),
            labels=lambda: pd.DataFrame(),
            scores=lambda frame=frame: frame.copy(),
            table=lambda name: pd.DataFrame(),
        )
        for name, (frame, arch) in models.items()
    )
    return StudyContext(seed=0, cache_dir=Path("."), runs=runs, probes=lambda: pd.DataFrame())


@pytest.fixture(scope="module")
def study():
    hybrid, ar = "autoregressive+diffusion", "autoregressive"
    models = {
        "h1": (_granular(0.05), hybrid),
        "h2": (_granular(0.08), hybrid),
        "h3": (_granular(0.11), hybrid),
        "a1": (_granular(0.06), ar),
        "a2": (_granular(0.12, drop=("Penalty_QPS",)), ar),
        "llm": (_granular(0.07, {"RFS-Und"}, drop=("AbsSDS",)), None),
    }
    return score_study(_ctx(models), IrisScoringConfig())


def test_partial_flags_in_scores_summary_and_entry(study):
    scores = study.tables["scores"].set_index(["model", "sector"])
    assert scores.at[("llm", "RFS-Und"), "partial"] and scores.at[("a2", "BIS-Gen"), "partial"]
    assert scores.at[("a2", "IRIS"), "partial"] and not scores.at[("a1", "IRIS"), "partial"]
    assert scores.at[("a2", "IRIS"), "gen_code"].endswith(" (partial)")
    assert not scores.at[("a2", "IRIS"), "und_code"].endswith(" (partial)")
    summary = study.tables["summary"].set_index("model")
    assert (
        summary.at["llm", "partial_sectors"] == "RFS-Und"
        and summary.at["h1", "partial_sectors"] == ""
    )
    entry = study.summary
    assert entry["llm"]["RFS-Und"]["partial"] is True and entry["llm"]["partial_sectors"] == [
        "RFS-Und"
    ]
    assert entry["a2"]["gen_code"].endswith(" (partial)") and "partial_sectors" not in entry["h1"]


def test_correlation_and_architecture_tables(study):
    corr = study.tables["sector_correlation"]
    assert len(corr) == 36 and set(corr["method"]) == {"pearson"}
    wide = study.tables["scores"].pivot(index="model", columns="sector", values="score")
    pair = wide[["IFS-Gen", "BIS-Und"]].dropna()
    both = corr[(corr["sector_a"] == "IFS-Gen") & (corr["sector_b"] == "BIS-Und")].iloc[0]
    assert (
        both["r"] == pytest.approx(np.corrcoef(pair["IFS-Gen"], pair["BIS-Und"])[0, 1])
        and both["n_models"] == 5
    )
    assert both["r"] > 0.99  # both fall with the planted level
    rfs = corr[(corr["sector_a"] == "RFS-Und") & (corr["sector_b"] == "RFS-Und")].iloc[0]
    assert rfs["n_models"] == 6 and rfs["n_partial"] == 1
    welch = study.tables["architecture_test"].set_index("score")
    assert set(welch.index) == {
        "IFS-Gen",
        "RFS-Gen",
        "BIS-Gen",
        "IFS-Und",
        "RFS-Und",
        "BIS-Und",
        "IRIS",
    }
    assert (welch["group_a"] == "autoregressive").all() and (welch["n_b"] == 3).all()
    assert (welch["status"] == "ok").all()
    assert "1 model(s) without an architecture left out" in welch.at["RFS-Und", "reason"]


def test_tournament_floor_table(study):
    floor = study.tables["tournament_floor"]
    assert len(floor) == 6 * 5 and (floor["oracle_floor"] == 0.01).all()
    assert floor["excess"].to_numpy() == pytest.approx((floor["value"] - 0.01).to_numpy())


def test_figure_4c_only_for_a_leaderboard(study):
    board = study.tables["scores"]
    figures = study_figures(board, "iris")
    assert [name for _, name in figures] == ["sector_correlation.png"]
    assert study_figures(board[board["model"] == "h1"], "h1") == []
    assert study_figures(study.tables["granular"], "h1") == []
