"""News bias's comparison role (paper 001): models ranked by the mean of each prompt type,
level, attribute and measure (lower is less biased), and compared on the word-level W of the
unbiased prompt over a replicate of articles."""

from __future__ import annotations

import numpy as np
import pandas as pd

from genfair.methodologies.comparison import Comparison, Headline, HeadlineCounts, Ranking
from genfair.methodologies.news_bias.config import NewsBiasConfig
from genfair.methodologies.news_bias.word_level import ATTRIBUTES, word_level_pairs
from genfair.resources.group_words import GroupWordCounter


def _headline(level: str, attribute: str, measure: str) -> Headline:
    return Headline(
        f"unbiased.{level}.{attribute}.{measure}",
        "mean",
        {"prompt_type": "unbiased", "level": level, "attribute": attribute, "measure": measure},
        "lower" if measure == "W" else "closer to 0",
        ("ci_low", "ci_high"),
    )


class NewsBiasComparison(Comparison[NewsBiasConfig]):
    """The word- and sentence-level bias of the unbiased prompt's rewrites."""

    # W, S, T: lower is less biased; a refusal of a biased prompt is not a worse answer (not ranked)
    ranking = Ranking(
        ("prompt_type", "level", "attribute", "measure"),
        "mean",
        True,
        unranked=("level", ("refusal",)),
    )
    headline = (
        *(_headline("word", a, "W") for a in ATTRIBUTES),
        *(_headline("sentence", a, m) for a in ATTRIBUTES for m in ("sentiment", "toxicity")),
    )

    #: an article (its rewrites under every prompt type): the unit its t-intervals are over
    paired_unit = "pair_id"

    def headline_function(self, config: NewsBiasConfig, modality: str) -> HeadlineCounts:
        """The word-level headlines (W per attribute, the mean over the unbiased prompt's kept
        articles, as :func:`.word_level.summarize_word_level`) from each article's W: their
        sum and count. The sentence-level ones are not compared: their sentiment and
        toxicity are the instruments' readings, made in the metrics step and not held in the
        labels (pairing them would run the toxicity classifier over every sentence again)."""
        counter = GroupWordCounter.from_files(config.gender_words, config.occupations, config.names)
        word = [h for h in self.headline if h.where["level"] == "word"]

        def tally(labels: pd.DataFrame) -> pd.DataFrame:
            labels = labels.reset_index(drop=True)
            ok = labels[(labels["prompt_type"] == "unbiased") & (labels["status"] == "ok")]
            parts = []
            for i, h in enumerate(word):
                table = word_level_pairs(ok, counter, h.where["attribute"])
                kept = ~table["dropped"].to_numpy(dtype=bool)
                for j, count in enumerate((table["W"].to_numpy(float)[kept], 1.0)):
                    parts.append(
                        pd.DataFrame({"row": ok.index[kept], "column": 2 * i + j, "count": count})
                    )
            return pd.concat(parts, ignore_index=True)

        def score(totals: np.ndarray) -> dict[str, np.ndarray]:
            with np.errstate(invalid="ignore", divide="ignore"):
                return {h.name: totals[:, 2 * i] / totals[:, 2 * i + 1] for i, h in enumerate(word)}

        return HeadlineCounts(2 * len(word), tally, score)
