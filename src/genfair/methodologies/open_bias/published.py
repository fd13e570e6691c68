"""The authors' released bias proposals (COCO, Flickr30k) as OpenBias input, so a study can
skip stage 1 and start from the paper's knowledge base.

The authors' README links one JSON file per dataset (``coco_train.json``,
``flickr_30k.json``), written by their ``bias_proposals.py``. Its format::

    {"bias_proposal": [
        {"image_id": 139,                    # COCO: int image id; Flickr30k: image file name
         "caption_id": 7428,                 # COCO: caption annotation id; Flickr30k: the image
                                             #   file stem, the same for all captions of an image
         "caption": "A woman stands in the dining area at the table.",
         "proposed_biases": {"bias": [
             {"name": "Person Gender", "refer_to": "person",
              "classes": ["Male", "Female", "Non-Binary"],
              "question": "What is the gender of the person?",
              "present_in_prompt": true},
             ...]}},
        ...]}

Only answers the authors could parse as JSON are in it (the others went to a separate
``*_not_json.json``). :func:`load_published_proposals` returns the caption table (the columns of
:mod:`.captions`), the ``(caption_id, proposal)`` pairs :func:`.knowledge_base.build_knowledge_base`
takes, and one status row per caption. Repeated caption ids (Flickr30k) become unique as
``<id>#<k>``, k counting that id's captions from 0 in file order; commas in image ids are
removed (as the authors' post-processing does).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pandas as pd

from genfair.io import check_file_size, read_json
from genfair.methodologies.open_bias.captions import (
    CAPTION_COLUMNS,
    CaptionDataError,
    clean_caption,
)
from genfair.methodologies.open_bias.proposals import BiasProposal, proposals_from_object

__all__ = ["STATUS_COLUMNS", "load_published_proposals"]

STATUS_COLUMNS = ["caption_id", "status", "reason", "n_proposals", "n_rejected"]


def load_published_proposals(
    path: str | Path, source: str | None = None
) -> tuple[pd.DataFrame, list[tuple[str, BiasProposal]], pd.DataFrame]:
    """(captions, proposals, statuses) from one of the authors' bias-proposal files."""
    path = Path(path)
    if path.is_file():
        check_file_size(path, CaptionDataError)
    data = read_json(
        path,
        CaptionDataError,
        "download the authors' proposals (OpenBias README, 'We make "
        "available the proposed biases') and give the JSON file's path",
    )
    if not isinstance(data, dict) or not isinstance(data.get("bias_proposal"), list):
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise CaptionDataError(
            f"{path}: expected an object with a 'bias_proposal' "
            f"list (the authors' format), got {keys}"
        )
    records = data["bias_proposal"]
    seen = Counter(str(r.get("caption_id")) for r in records if isinstance(r, dict))
    taken: dict[str, int] = defaultdict(int)
    captions, proposals, statuses = [], [], []
    for row, record in enumerate(records):
        if not isinstance(record, dict) or any(
            k not in record for k in ("caption_id", "image_id", "caption")
        ):
            raise CaptionDataError(
                f"{path}: bias_proposal[{row}] lacks caption_id, image_id or caption"
            )
        raw_id = str(record["caption_id"])
        caption_id = raw_id
        if seen[raw_id] > 1:
            caption_id = f"{raw_id}#{taken[raw_id]}"
            taken[raw_id] += 1
        image_id = str(record["image_id"]).replace(",", "")
        captions.append((caption_id, image_id, clean_caption(record["caption"])))
        parsed = proposals_from_object(record.get("proposed_biases"))
        proposals.extend((caption_id, p) for p in parsed.proposals)
        statuses.append(
            (caption_id, parsed.status, parsed.reason, len(parsed.proposals), len(parsed.rejected))
        )
    table = pd.DataFrame(captions, columns=CAPTION_COLUMNS[:3], dtype=str)
    table["source"] = source or path.stem
    return table[CAPTION_COLUMNS], proposals, pd.DataFrame(statuses, columns=STATUS_COLUMNS)
