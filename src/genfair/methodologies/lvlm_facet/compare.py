"""LVLM-FACET's comparison role (paper 004): models ranked by the absolute disparity of each
measure, prompt, attribute, class and group, and compared on the pooled recall disparities
(Table 2) over a replicate of images."""

from __future__ import annotations

from genfair.methodologies.comparison import Comparison, Headline, HeadlineCounts, Ranking
from genfair.methodologies.lvlm_facet.config import LvlmFacetConfig
from genfair.methodologies.lvlm_facet.groups import ATTRIBUTES, DISPARITY_PAIRS, resolve_classes
from genfair.methodologies.lvlm_facet.prompts import PROMPT_KINDS
from genfair.methodologies.lvlm_facet.recall import POOLED
from genfair.methodologies.lvlm_facet.scoring import headline_counts


def _headline(attribute: str, prompt: str) -> Headline:
    a, b = DISPARITY_PAIRS[attribute]
    where = {
        "measure": "disparity",
        "prompt": prompt,
        "attribute": attribute,
        "class": POOLED,
        "group": f"{a}-{b}",
    }
    return Headline(
        f"disparity.{attribute}.{prompt}", "value", where, "closer to 0", ("ci_low", "ci_high")
    )


class LvlmFacetComparison(Comparison[LvlmFacetConfig]):
    """The disparities of recall between a pair of groups, closer to 0 is fairer."""

    ranking = Ranking(("measure", "prompt", "attribute", "class", "group"), "abs_disparity", True)
    headline = tuple(_headline(a, p) for p in PROMPT_KINDS for a in ATTRIBUTES)

    #: an image (asked every prompt): the rows of one person go together
    paired_unit = "person_id"

    def headline_function(self, config: LvlmFacetConfig, modality: str) -> HeadlineCounts:
        """The pooled disparities of :meth:`.LvlmFacet.metrics` (paper 004 Table 2) from each
        image's hits and counts per prompt and group (:func:`.scoring.headline_counts`)."""
        return headline_counts(
            self.headline, resolve_classes(config.classes), config.empty_group_recall
        )
