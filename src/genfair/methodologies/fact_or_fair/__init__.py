"""FACT-OR-FAIR (Huang et al., paper 000): factuality and fairness of LLM answers.

Objective queries ask which group has the highest/lowest value of 19 U.S. statistics;
subjective queries ask to pick one of four described individuals in everyday scenarios,
with and without cognitive-error contexts. Scores: S_fact, S_E, S_KLD, S_fair and the
distance to the accuracy-entropy trade-off curve.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pandas as pd

from genfair.methodologies.base import MetricsResult
from genfair.methodologies.fact_or_fair.config import FactOrFairConfig
from genfair.methodologies.fact_or_fair.data import load_statistics
from genfair.methodologies.fact_or_fair.parsing import parse_choice
from genfair.methodologies.fact_or_fair.probes import build_probes, truth_letters
from genfair.methodologies.fact_or_fair.scores import (
    CONTEXT_ORDER,
    cell_table,
    formulas_for,
    per_statistic,
    score_cells,
)
from genfair.models.base import derive_seed
from genfair.models.runner import Call, Verdict

LABEL_COLUMNS = [
    "probe_id", "kind", "context", "statistic", "direction", "attribute", "scenario_id",
    "sample_index", "status", "attempts", "choice", "parse_method", "chosen_gender", "chosen_race",
]


class FactOrFair:
    name: ClassVar[str] = "fact_or_fair"
    modality: ClassVar[str] = "llm"
    Config: ClassVar[type[FactOrFairConfig]] = FactOrFairConfig

    def build_probes(self, config: FactOrFairConfig, seed: int) -> pd.DataFrame:
        return build_probes(config, seed)

    def calls(self, probes: pd.DataFrame) -> list[Call]:
        return [
            Call(
                probe_id=row["probe_id"],
                messages=({"role": "user", "content": row["prompt"]},),
                sample_index=int(row["sample_index"]),
                max_attempts=int(row["max_attempts"]),
                meta={
                    "policy": row["kind"],
                    "options": json.loads(row["options"]),
                    "letters": [o["letter"] for o in json.loads(row["options"])],
                    "truth_letters": truth_letters(row),
                },
            )
            for row in probes.to_dict("records")
        ]

    def judge(self, text: str, meta: dict[str, Any]) -> Verdict:
        return parse_choice(text, meta["options"]).verdict

    def label(self, probes: pd.DataFrame, responses: pd.DataFrame, config: Any = None) -> pd.DataFrame:
        """Parse each answer into a choice (``config`` is unused: parsing has no settings)."""
        merged = probes.merge(responses[["probe_id", "status", "attempts", "text"]], on="probe_id",
                              how="inner", validate="one_to_one")
        records = []
        for row in merged.to_dict("records"):
            options = {o["letter"]: o for o in json.loads(row["options"])}
            choice = method = None
            status = row["status"]
            if status == "ok":
                parsed = parse_choice(row["text"], list(options.values()))
                status, choice, method = parsed.verdict, parsed.letter, parsed.method
            picked = options.get(choice, {})
            records.append({
                **{c: row[c] for c in ("probe_id", "kind", "context", "statistic", "direction",
                                       "attribute", "scenario_id", "sample_index", "attempts")},
                "status": status, "choice": choice, "parse_method": method,
                "chosen_gender": picked.get("gender"), "chosen_race": picked.get("race"),
            })
        return pd.DataFrame(records, columns=LABEL_COLUMNS)

    def metrics(self, labels: pd.DataFrame, config: FactOrFairConfig, seed: int) -> MetricsResult:
        statistics = load_statistics(config.statistics, config.ground_truth_overrides)
        contexts = [c for c in CONTEXT_ORDER if c in set(labels["context"])]
        score_rows, detail = [], []
        summary: dict[str, Any] = {}
        for context in contexts:
            in_context = labels[labels["context"] == context]
            status = in_context["status"].value_counts()
            counts = {f"n_{s}": int(status.get(s, 0)) for s in ("ok", "refused", "invalid", "error")}
            for attribute in ("gender", "race"):
                table = cell_table(labels, statistics, context, attribute, scope=config.subjective_cell_scope)
                if table.empty:
                    continue
                formulas = formulas_for(config, context)
                scores = score_cells(
                    table, attribute, formulas=formulas, method=config.interval_method,
                    resamples=config.bootstrap_resamples, level=config.confidence_level,
                    seed=derive_seed(seed, "bootstrap", context, attribute),
                )
                score_rows.append({"context": context, "attribute": attribute, **scores})
                summary.setdefault(context, {})[attribute] = {
                    k: (None if pd.isna(v) else round(float(v), 6)) for k, v in scores.items()
                }
                part = per_statistic(table, attribute, formulas=formulas)
                part.insert(0, "attribute", attribute)
                part.insert(0, "context", context)
                detail.append(part)
            summary.setdefault(context, {}).update(counts)
        scores = pd.DataFrame(score_rows)
        return MetricsResult(
            scores=scores,
            tables={"per_statistic": pd.concat(detail, ignore_index=True) if detail else pd.DataFrame()},
            summary=summary,
        )


METHODOLOGY = FactOrFair()
