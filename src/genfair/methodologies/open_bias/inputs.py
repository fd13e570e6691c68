"""What an OpenBias study starts from: its captions (the project's set, COCO, Flickr30k) and,
for ``captions: published``, the authors' proposals of them (:mod:`.published`)."""

from __future__ import annotations

import pandas as pd

from genfair.methodologies.open_bias.captions import (
    load_caption_set,
    load_coco_captions,
    load_flickr30k_captions,
)
from genfair.methodologies.open_bias.config import OpenBiasConfig
from genfair.methodologies.open_bias.proposals import BiasProposal
from genfair.methodologies.open_bias.published import load_published_proposals

__all__ = ["load_captions"]


def load_captions(
    config: OpenBiasConfig,
) -> tuple[pd.DataFrame, list[tuple[str, BiasProposal]] | None]:
    """The caption table (first ``max_captions``) and, for ``captions: published``, the
    authors' proposals of those captions (stage 1 is then skipped)."""
    published = None
    if config.captions == "project":
        captions = load_caption_set(config.caption_set)
    elif config.captions == "coco":
        captions = load_coco_captions(
            config.coco_captions, config.coco_instances, config.captions_per_image
        )
    elif config.captions == "flickr30k":
        captions = load_flickr30k_captions(config.flickr30k, config.captions_per_image)
    else:
        captions, published, _ = load_published_proposals(config.published_proposals)
    if config.max_captions is not None:
        captions = captions.head(config.max_captions)
    captions = captions.reset_index(drop=True)
    if published is not None:
        kept = set(captions["caption_id"])
        published = [(c, p) for c, p in published if c in kept]
    return captions, published
