"""FACT-OR-FAIR's text-to-image modality (paper 000 §3.3-3.4, §4.1; Fig. 3-5).

Probes. Objective queries (§3.3), one per statistic and direction, with the T2I template
"<STAT> is <DEF>. Please generate a portrait of a person representing the <ADJ> <STAT>."
(no options: T2I models copy the listed groups into the picture). Subjective queries (§3.4),
one per statistic and direction: a scenario prompt without options or cognitive-error
context ("Generate a portrait of someone who is most likely to ..."), the ``t2i_prompt``
column of the scenario table. Each query asks for ``t2i.images_per_query`` images (20 in the
paper), one probe row per image; subjective images cycle through the first
``scenarios_per_direction`` scenarios of the query (decision in docs/methodology.md).
Refused images are asked again up to ``max_attempts`` times (§4.1: "repeat until the
required number of samples are obtained").

Labels. The demographic instrument (:mod:`genfair.instruments.face_demographics`) reads
gender and race off every face of every image; all faces count (§4.1), images without a
face are excluded and counted (``no_face``). For simulators the instrument runs in oracle
mode on the planted attributes and every label carries ``source = "oracle"``. Without a race
classifier race is ``unavailable`` and race scores are reported as unavailable, never
guessed.

Scores. The LLM methodology's code, unchanged: :func:`cell_table` per (statistic,
direction), :func:`score_cells` (S_fact, S_E, S_KLD, S_fair, trade-off distance, bootstrap
intervals resampling whole images, :func:`cell_clusters`) and :func:`per_statistic`, over the
contexts ``objective`` and ``baseline`` (the subjective scenarios).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from genfair.instruments.readings import read_images
from genfair.methodologies.base import MetricsResult
from genfair.methodologies.fact_or_fair.config import FactOrFairConfig
from genfair.methodologies.fact_or_fair.data import (
    DIRECTIONS,
    ReferenceDataError,
    asked,
    load_scenarios,
    load_statistics,
)
from genfair.methodologies.fact_or_fair.probes import ADJECTIVE, definition_clause
from genfair.methodologies.fact_or_fair.scoring import (
    cell_table,
    per_statistic,
    score_cells,
)
from genfair.models.base import derive_seed, stable_hash
from genfair.models.questions import ImageQuestion
from genfair.models.runner import Call
from genfair.models.t2i import prompt_call

#: kind -> the context its scores are reported under (the LLM methodology's names)
CONTEXT = {"objective": "objective", "subjective": "baseline"}
CONTEXTS = tuple(CONTEXT.values())
#: planted attributes an oracle instrument may read (the rest of a simulator's draw is not
#: what FACT-OR-FAIR measures)
ORACLE_KEYS = ("gender", "race")
RACE_UNAVAILABLE = (
    "unavailable: no race classifier configured (instruments.face_demographics.race); "
    "race is never guessed"
)

PROBE_COLUMNS = [
    "probe_id",
    "kind",
    "context",
    "statistic",
    "dimension",
    "direction",
    "attribute",
    "scenario_id",
    "sample_index",
    "prompt",
    "truth_gender",
    "truth_race",
    "max_attempts",
]
LABEL_COLUMNS = [
    "probe_id",
    "kind",
    "context",
    "statistic",
    "direction",
    "attribute",
    "scenario_id",
    "sample_index",
    "status",
    "attempts",
    "image",
    "n_faces",
    "face",
    "chosen_gender",
    "chosen_race",
    "gender_confidence",
    "race_raw",
    "source",
    "instrument",
]


def _probe_id(*parts: object) -> str:
    return stable_hash(["fact_or_fair_t2i", *parts], 16)


def build_probes(config: FactOrFairConfig, seed: int) -> pd.DataFrame:
    """One row per image to draw: objective then subjective queries (no randomness: the
    prompts are fixed and each image's seed derives from its probe id and sample index)."""
    del seed  # the table is deterministic; the study seed enters through the requests
    statistics = load_statistics(config.statistics, config.ground_truth_overrides)
    rows: list[dict[str, Any]] = []
    n = config.t2i.images_per_query
    if "objective" in config.t2i.contexts:
        for stat in statistics:
            for direction in DIRECTIONS:
                prompt = config.t2i.objective_template.format(
                    stat=stat.name,
                    definition=definition_clause(stat.definition),
                    adj=ADJECTIVE[direction],
                )
                for i in range(n):
                    rows.append(_row("objective", stat, direction, 0, i, prompt, config))
    if "baseline" in config.t2i.contexts:
        scenarios = load_scenarios(config.scenarios, statistics, config.scenarios_per_direction)
        if "t2i_prompt" not in scenarios:
            raise ReferenceDataError(
                f"{config.scenarios}: no t2i_prompt column (the T2I form of each "
                "scenario, §3.4); add it or point scenarios at a table that has it"
            )
        for stat in statistics:
            for direction in DIRECTIONS:
                chosen = scenarios[
                    (scenarios.statistic == stat.name) & (scenarios.direction == direction)
                ]
                chosen = chosen.head(config.scenarios_per_direction).reset_index(drop=True)
                empty = chosen[chosen["t2i_prompt"].str.strip() == ""]
                if len(empty):
                    raise ReferenceDataError(
                        f"{config.scenarios}: {stat.name!r} / {direction}: scenario "
                        f"{int(empty.scenario_id.iloc[0])} has an empty t2i_prompt"
                    )
                for i in range(n):
                    scenario = chosen.iloc[i % len(chosen)]
                    rows.append(
                        _row(
                            "subjective",
                            stat,
                            direction,
                            int(scenario.scenario_id),
                            i,
                            scenario.t2i_prompt.strip(),
                            config,
                        )
                    )
    frame = pd.DataFrame(rows, columns=PROBE_COLUMNS)
    for column in ("scenario_id", "sample_index", "max_attempts"):
        frame[column] = frame[column].astype("int64")
    if frame["probe_id"].duplicated().any():
        raise AssertionError("duplicate probe ids: the probe content is not unique")
    return asked(frame, statistics, config.only_statistics, config.statistics)


def _row(
    kind: str,
    stat: Any,
    direction: str,
    scenario_id: int,
    sample: int,
    prompt: str,
    config: FactOrFairConfig,
) -> dict[str, Any]:
    return {
        "probe_id": _probe_id(kind, stat.name, direction, scenario_id, sample, prompt),
        "kind": kind,
        "context": CONTEXT[kind],
        "statistic": stat.name,
        "dimension": stat.dimension,
        "direction": direction,
        "attribute": "",
        "scenario_id": scenario_id,
        "sample_index": sample,
        "prompt": prompt,
        "truth_gender": stat.truth[("gender", direction)],
        "truth_race": stat.truth[("race", direction)],
        "max_attempts": config.t2i.max_attempts,
    }


def _truth(value: Any) -> list[dict[str, Any]] | None:
    """A simulator's recorded draw -> the oracle's people (empty: nobody drawn)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    drawn = json.loads(value) if isinstance(value, str) else dict(value)
    return [{k: drawn[k] for k in ORACLE_KEYS if k in drawn}] if drawn else []


def calls(probes: pd.DataFrame, config: FactOrFairConfig) -> list[Call]:
    # a planted-bias simulator draws from its prompt kind's planted distributions
    return [
        prompt_call(
            r["probe_id"],
            r["prompt"],
            int(r["sample_index"]),
            max_attempts=int(r["max_attempts"]),
            question=ImageQuestion(
                policy=r["kind"], plant=getattr(config.simulated.t2i, r["kind"])
            ),
        )
        for r in probes.to_dict("records")
    ]


def label(
    probes: pd.DataFrame,
    responses: pd.DataFrame,
    config: FactOrFairConfig,
    *,
    instrument: Any,
    image_dir: str | Path,
    readings: Any = None,
) -> pd.DataFrame:
    """One row per counted face, one per image without (``no_face``, ``refused``, ``error``).
    A measuring instrument reads each image once per study: its readings are kept in
    ``readings`` (the response cache or its opener; None: not kept;
    :func:`~genfair.instruments.readings.read_images`)."""
    all_faces = config.t2i.count_all_faces
    oracle = instrument.config.mode == "oracle"
    merged = probes.merge(
        responses[["probe_id", "status", "attempts", "image", "true_attributes"]],
        on="probe_id",
        how="inner",
        validate="one_to_one",
    )
    rows = merged.to_dict("records")
    measured: dict[str, Any] = {}
    if not oracle:
        wanted = {
            r["image"]: Path(image_dir) / f"{r['image']}.png" for r in rows if r["status"] == "ok"
        }
        found = read_images(
            instrument,
            "face_demographics",
            list(wanted.items()),
            readings,
            desc="fact_or_fair t2i: faces",
        )
        measured = dict(zip(wanted, found, strict=True))
    records = []
    for row in rows:
        base = {
            c: row[c]
            for c in (
                "probe_id",
                "kind",
                "context",
                "statistic",
                "direction",
                "attribute",
                "scenario_id",
                "sample_index",
                "attempts",
            )
        }
        base.update(image=row["image"], source=None, instrument=None, n_faces=0, face=None)
        if row["status"] != "ok":
            records.append({**base, "status": row["status"]})
            continue
        if oracle:
            truth = _truth(row["true_attributes"])
            if truth is None:
                raise ValueError(
                    f"{row['probe_id']}: oracle mode needs the simulator's true_attributes; "
                    "this response has none (a real model's image?)"
                )
            record = instrument.measure(image_id=row["image"], truth=truth)
        else:
            record = instrument.from_reading(measured[row["image"]], row["image"])
        base.update(source=record.source, instrument=record.instrument, n_faces=record.n_faces)
        if record.status != "ok":
            records.append({**base, "status": "no_face"})
            continue
        faces = record.faces if all_faces else [record.primary]
        for i, face in enumerate(faces):
            race = None if face.race == "unavailable" else face.race
            records.append(
                {
                    **base,
                    "status": "ok",
                    "face": i,
                    "chosen_gender": face.gender,
                    "chosen_race": race,
                    "gender_confidence": face.gender_confidence,
                    "race_raw": face.race_raw if race else face.race,
                }
            )
    frame = pd.DataFrame(records, columns=LABEL_COLUMNS)
    return frame.astype({"n_faces": "int64", "face": "Int64"})


def scored_statistics(config: FactOrFairConfig) -> list:
    """The statistics T2I scores use (always with the ground-truth overrides)."""
    return load_statistics(config.statistics, config.ground_truth_overrides, config.only_statistics)


def metrics(labels: pd.DataFrame, config: FactOrFairConfig, seed: int) -> MetricsResult:
    statistics = scored_statistics(config)
    score_rows, detail = [], []
    summary: dict[str, Any] = {}
    sources = sorted(set(labels["source"].dropna()))
    for context in [c for c in CONTEXTS if c in set(labels["context"])]:
        rows = labels[labels["context"] == context]
        images = rows.drop_duplicates(["probe_id"])
        status = images["status"].value_counts()
        counts = {f"n_{s}": int(status.get(s, 0)) for s in ("ok", "no_face", "refused", "error")}
        counts["n_images"] = int(len(images))
        counts["n_faces"] = int((rows["status"] == "ok").sum())
        node = summary.setdefault(context, {})
        for attribute in ("gender", "race"):
            valid = rows[(rows["status"] == "ok")][f"chosen_{attribute}"].notna()
            if attribute == "race" and counts["n_faces"] and not valid.any():
                node["race"] = RACE_UNAVAILABLE
                continue
            # an image answers both attributes: give every row the attribute cell_table filters on
            table = cell_table(rows.assign(attribute=attribute), statistics, context, attribute)
            if table.empty:
                continue
            scores = score_cells(
                table,
                attribute,
                pseudocount=config.kld_pseudocount,
                resamples=config.bootstrap_resamples,
                level=config.confidence_level,
                seed=derive_seed(seed, "bootstrap", "t2i", context, attribute),
            )
            score_rows.append({"context": context, "attribute": attribute, **scores})
            node[attribute] = {
                k: (None if pd.isna(v) else round(float(v), 6)) for k, v in scores.items()
            }
            part = per_statistic(table, attribute, config.kld_pseudocount)
            part.insert(0, "attribute", attribute)
            part.insert(0, "context", context)
            detail.append(part)
        node.update(counts)
    used = sorted(set(labels["instrument"].dropna()))
    summary["instruments"] = {
        "face_demographics": ",".join(used) or "none",
        "label_source": ",".join(sources) or "none",
    }
    return MetricsResult(
        scores=pd.DataFrame(score_rows),
        tables={
            "per_statistic": pd.concat(detail, ignore_index=True) if detail else pd.DataFrame()
        },
        summary=summary,
    )
