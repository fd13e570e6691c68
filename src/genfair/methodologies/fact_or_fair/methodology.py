"""FACT-OR-FAIR (Huang et al., paper 000): factuality and fairness of LLM answers and of
text-to-image portraits.

LLMs: objective queries ask which group has the highest/lowest value of 19 U.S.
statistics; subjective queries ask to pick one of four described individuals in everyday
scenarios, with and without cognitive-error contexts. Text-to-image models (§3.3-3.4,
:mod:`.t2i`): portraits for the same queries, faces labelled by the demographic instrument.
Scores, for both: S_fact, S_E, S_KLD, S_fair and the distance to the accuracy-entropy
trade-off curve.

Its presentation (figures, report section, ``dvc plots``, samples): :mod:`.report`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pandas as pd

from genfair.methodologies.base import (
    Footprint,
    Methodology,
    MetricsResult,
    StepContext,
)
from genfair.methodologies.fact_or_fair import t2i
from genfair.methodologies.fact_or_fair.compare import FactOrFairComparison
from genfair.methodologies.fact_or_fair.config import FactOrFairConfig
from genfair.methodologies.fact_or_fair.data import RACES, load_statistics
from genfair.methodologies.fact_or_fair.parsing import parse_choice
from genfair.methodologies.fact_or_fair.prime_following import prime_following, primed_scores
from genfair.methodologies.fact_or_fair.probes import (
    build_probes,
    planted,
    primed_letters,
    truth_letters,
)
from genfair.methodologies.fact_or_fair.report import FactOrFairPresentation
from genfair.methodologies.fact_or_fair.scoring import (
    CONTEXT_ORDER,
    cell_table,
    formulas_for,
    per_statistic,
    score_cells,
    statistics_for,
)
from genfair.methodologies.reads import every_field_but
from genfair.models.base import derive_seed
from genfair.models.questions import ChoiceQuestion
from genfair.models.runner import Call, Verdict

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
    "choice",
    "parse_method",
    "chosen_gender",
    "chosen_race",
    # the primed identity of the attribution and in-group contexts (prime following, §4.4)
    "context_race",
    "context_gender",
    "context_behaviour",
]


#: the config fields only the metrics step reads (how answers are scored, not asked)
SCORING_FIELDS = (
    "kld_pseudocount", "bootstrap_resamples", "confidence_level", "interval_method", "formulas",
    "kld_aggregation", "kld_smoothing", "kld_epsilon", "kld_log_base", "zero_kl_score",
    "subjective_cell_scope", "distance_axis", "score_ground_truth", "subjective_fact_statistics",
    "distance_search",
)  # fmt: skip


class FactOrFair(Methodology[FactOrFairConfig]):
    """FACT-OR-FAIR (Huang et al., paper 000): factuality vs. fairness of LLM answers on 19
    U.S. statistics, and of text-to-image portraits for the same queries."""

    name: ClassVar[str] = "fact_or_fair"
    presentation_role = FactOrFairPresentation
    modalities = ("llm", "t2i")
    #: the T2I portraits' faces (:meth:`label`)
    measures = ("face_demographics",)
    Config: ClassVar[type[FactOrFairConfig]] = FactOrFairConfig
    comparison_role = FactOrFairComparison
    #: the fields each step reads (its stage depends on them alone); the scoring choices are
    #: the metrics step's: changing one reruns metrics and what follows, never the calls
    reads: ClassVar[dict[str, tuple[str, ...]]] = {
        "probes": every_field_but(FactOrFairConfig, *SCORING_FIELDS),
        "generate": every_field_but(FactOrFairConfig, *SCORING_FIELDS),
        "label": ("t2i",),
        "study": (),
    }
    metric_keys = ("context", "attribute")

    def footprint(self, config: FactOrFairConfig) -> list[Footprint]:
        """The subjective probes (statistics x 2 directions x scenarios x samples x contexts;
        about 2,000 bytes a row at the peak of building them, measured with tracemalloc at 10
        and 60 samples) and one bootstrap (statistics x 2 cells x 4 race groups, int64 draws
        and three float64 copies: 32 bytes a value, per resample)."""
        stats = len(
            load_statistics(
                config.statistics, config.ground_truth_overrides, config.only_statistics
            )
        )
        return [
            Footprint(
                "samples_per_prompt",
                "the subjective probe table",
                stats * 2 * config.scenarios_per_direction * config.samples_per_prompt
                * len(config.contexts),
                2_000,
            ),
            Footprint(
                "bootstrap_resamples",
                "one bootstrap's resampled counts",
                config.bootstrap_resamples,
                stats * 2 * len(RACES) * 32,
            ),
        ]  # fmt: skip

    def build_probes(self, config: FactOrFairConfig, seed: int) -> pd.DataFrame:
        """The LLM probes, then the T2I probes (``modality`` column: ``llm`` / ``t2i``)."""
        return pd.concat(
            [
                build_probes(config, seed).assign(modality="llm"),
                t2i.build_probes(config, seed).assign(modality="t2i"),
            ],
            ignore_index=True,
        )

    def calls(self, probes: pd.DataFrame, config: FactOrFairConfig, modality: str) -> list[Call]:
        if modality == "t2i":
            return t2i.calls(probes, config)
        return [
            Call.text(
                row["probe_id"],
                row["prompt"],
                sample_index=int(row["sample_index"]),
                max_attempts=int(row["max_attempts"]),
                meta={
                    "options": json.loads(row["options"]),
                    **ChoiceQuestion(
                        policy=row["kind"],
                        letters=[o["letter"] for o in json.loads(row["options"])],
                        truth_letters=truth_letters(row),
                        primed_letters=primed_letters(row),
                        plant=planted(row, getattr(config.simulated.llm, row["kind"])),
                    ).meta(),
                },
            )
            for row in probes.to_dict("records")
        ]

    def judge(self, text: str, meta: dict[str, Any]) -> Verdict:
        return parse_choice(text, meta["options"]).verdict

    def label(
        self,
        probes: pd.DataFrame,
        responses: pd.DataFrame,
        config: FactOrFairConfig,
        ctx: StepContext,
    ) -> pd.DataFrame:
        """LLMs: each answer parsed into a choice; T2I: the faces of each image (the
        demographic instrument, oracle mode for simulators)."""
        if ctx.modality == "t2i":
            return t2i.label(
                probes,
                responses,
                config,
                instrument=ctx.instrument("face_demographics"),
                image_dir=ctx.image_dir,
                readings=ctx.open_cache,
            )
        merged = probes.merge(
            responses[["probe_id", "status", "attempts", "text"]],
            on="probe_id",
            how="inner",
            validate="one_to_one",
        )
        records = []
        for row in merged.to_dict("records"):
            options = {o["letter"]: o for o in json.loads(row["options"])}
            choice = method = None
            status = row["status"]
            if status == "ok":
                parsed = parse_choice(row["text"], list(options.values()))
                status, choice, method = parsed.verdict, parsed.letter, parsed.method
            picked = options.get(choice, {})
            records.append(
                {
                    **{
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
                            "context_race",
                            "context_gender",
                            "context_behaviour",
                        )
                    },
                    "status": status,
                    "choice": choice,
                    "parse_method": method,
                    "chosen_gender": picked.get("gender"),
                    "chosen_race": picked.get("race"),
                }
            )
        return pd.DataFrame(records, columns=LABEL_COLUMNS)

    def metrics(
        self, labels: pd.DataFrame, config: FactOrFairConfig, ctx: StepContext
    ) -> MetricsResult:
        if ctx.modality == "t2i":
            return t2i.metrics(labels, config, ctx.seed)
        return self._llm_metrics(labels, config, ctx.seed)

    def _llm_metrics(
        self, labels: pd.DataFrame, config: FactOrFairConfig, seed: int
    ) -> MetricsResult:
        statistics = statistics_for(config)
        contexts = [c for c in CONTEXT_ORDER if c in set(labels["context"])]
        score_rows, detail = [], []
        summary: dict[str, Any] = {}
        for context in contexts:
            in_context = labels[labels["context"] == context]
            status = in_context["status"].value_counts()
            counts = {
                f"n_{s}": int(status.get(s, 0)) for s in ("ok", "refused", "invalid", "error")
            }
            for attribute in ("gender", "race"):
                table = _cells(labels, statistics, config, context, attribute)
                if table.empty:
                    continue
                formulas = formulas_for(config, context)
                scores = score_cells(
                    table,
                    attribute,
                    formulas=formulas,
                    method=config.interval_method,
                    resamples=config.bootstrap_resamples,
                    level=config.confidence_level,
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
        tables = {
            "per_statistic": pd.concat(detail, ignore_index=True) if detail else pd.DataFrame()
        }
        tables.update(_prime_tables(labels, statistics, config, seed, summary))
        return MetricsResult(scores=scores, tables=tables, summary=summary)


def _cells(
    labels: pd.DataFrame, statistics: list, config: FactOrFairConfig, context: str, attribute: str
) -> pd.DataFrame:
    """:func:`cell_table` under the config's subjective cell scope and fact statistics."""
    return cell_table(
        labels,
        statistics,
        context,
        attribute,
        scope=config.subjective_cell_scope,
        fact_statistics=config.subjective_fact_statistics,
    )


def _prime_tables(
    labels: pd.DataFrame,
    statistics: list,
    config: FactOrFairConfig,
    seed: int,
    summary: dict[str, Any],
) -> dict[str, pd.DataFrame]:
    """Prime following (§4.4): the rate per primed context and attribute, and the scores
    per primed group (:mod:`.prime_following`); summary under ``prime_following``."""

    def score(subset: pd.DataFrame, context: str, attribute: str) -> dict[str, Any] | None:
        table = _cells(subset, statistics, config, context, attribute)
        if table.empty:
            return None
        return score_cells(
            table,
            attribute,
            formulas=formulas_for(config, context),
            method=config.interval_method,
            resamples=config.bootstrap_resamples,
            level=config.confidence_level,
            seed=derive_seed(seed, "bootstrap", context, attribute, "primed"),
        )

    rates = prime_following(labels, config.confidence_level)
    for row in rates[rates["direction"] == "all"].to_dict("records"):
        summary.setdefault("prime_following", {}).setdefault(row["context"], {})[
            row["attribute"]
        ] = {
            k: (None if pd.isna(row[k]) else round(float(row[k]), 6))
            for k in ("rate", "ci_low", "ci_high", "chance", "p_value", "n")
        }
    return {"prime_following": rates, "primed_scores": primed_scores(labels, score)}
