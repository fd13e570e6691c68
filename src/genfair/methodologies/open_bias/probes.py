"""The three probe tables of OpenBias, as pure functions (the methodology class wires them).

1. :func:`proposal_probes` -- one LLM call per caption (stage 1, §3.1), with the authors' chat;
   :func:`collect_proposals` turns the answers into ``(caption_id, proposal)`` pairs and one
   status row per caption, and :func:`proposal_yield` the share of captions with a valid one.
2. :func:`image_probes` -- N images per caption of the knowledge base (stage 2, §3.2, Eq. 2;
   paper N = 10), one row per image. A caption is drawn once however many biases it serves,
   and every bias of the caption is asked on the same images, as the authors do. Each image's
   seed derives from its probe id and ``sample_index`` in the generation step.
3. :func:`vqa_probes` -- one question per (bias, caption, image) (stage 3, Eq. 3) with the
   choices and prompt of :mod:`.vqa`.

Probe ids hash the probe's content (:func:`genfair.models.base.stable_hash`), so they are
stable across runs and change when the content does.
"""

from __future__ import annotations

import json

import pandas as pd

from genfair.methodologies.open_bias.proposals import (
    BiasProposal,
    ProposalPrompt,
    build_messages,
    parse_proposals,
)
from genfair.methodologies.open_bias.vqa import vqa_choices, vqa_prompt
from genfair.models.base import stable_hash

__all__ = [
    "IMAGE_PROBE_COLUMNS",
    "PROPOSAL_PROBE_COLUMNS",
    "PROPOSAL_STATUS_COLUMNS",
    "VQA_PROBE_COLUMNS",
    "collect_proposals",
    "image_probes",
    "proposal_probes",
    "proposal_yield",
    "vqa_probes",
]

PROPOSAL_PROBE_COLUMNS = ["probe_id", "caption_id", "image_id", "caption", "messages"]
PROPOSAL_STATUS_COLUMNS = [
    "caption_id",
    "status",
    "reason",
    "attempts",
    "n_proposals",
    "n_rejected",
]
IMAGE_PROBE_COLUMNS = ["probe_id", "caption_id", "caption", "sample_index"]
VQA_PROBE_COLUMNS = [
    "probe_id",
    "bias_id",
    "caption_id",
    "sample_index",
    "image_probe_id",
    "question",
    "choices",
    "prompt",
]


def _id(*parts: object) -> str:
    return stable_hash(["open_bias", *parts], 16)


def proposal_probes(captions: pd.DataFrame, prompt: ProposalPrompt | None = None) -> pd.DataFrame:
    """One row per caption: its chat (``messages``, JSON) for the bias-proposal LLM."""
    rows = []
    for row in captions[["caption_id", "image_id", "caption"]].astype(str).itertuples(index=False):
        messages = build_messages(row.caption, prompt)
        rows.append(
            (
                _id("proposal", row.caption_id, messages),
                row.caption_id,
                row.image_id,
                row.caption,
                json.dumps(messages, ensure_ascii=False),
            )
        )
    return pd.DataFrame(rows, columns=PROPOSAL_PROBE_COLUMNS)


def collect_proposals(
    probes: pd.DataFrame,
    responses: pd.DataFrame,
    repair_trailing_commas: bool = True,
    salvage_truncated: bool = False,
) -> tuple[list[tuple[str, BiasProposal]], pd.DataFrame]:
    """Answers (``probe_id, status, text`` and optionally ``attempts``) -> the proposal pairs
    in caption order and one status row per caption: the parser's ``ok`` / ``invalid`` for
    answered calls, the runner's status (``error``, ``refused``...) otherwise, ``missing``
    for a caption with no response row."""
    by_probe = responses.set_index("probe_id", drop=False)
    if by_probe.index.duplicated().any():
        raise ValueError(
            "responses hold more than one row per probe_id: pass the final attempt of each call"
        )
    pairs: list[tuple[str, BiasProposal]] = []
    statuses = []
    for probe_id, caption_id in zip(
        probes["probe_id"], probes["caption_id"].astype(str), strict=True
    ):
        if probe_id not in by_probe.index:
            statuses.append((caption_id, "missing", "no response", 0, 0, 0))
            continue
        response = by_probe.loc[probe_id]
        attempts = int(response["attempts"]) if "attempts" in response.index else 1
        if response["status"] not in ("ok", "invalid"):
            statuses.append((caption_id, str(response["status"]), "no answer", attempts, 0, 0))
            continue
        parsed = parse_proposals(response["text"], repair_trailing_commas, salvage_truncated)
        pairs.extend((caption_id, p) for p in parsed.proposals)
        statuses.append(
            (
                caption_id,
                parsed.status,
                parsed.reason,
                attempts,
                len(parsed.proposals),
                len(parsed.rejected),
            )
        )
    return pairs, pd.DataFrame(statuses, columns=PROPOSAL_STATUS_COLUMNS)


def proposal_yield(statuses: pd.DataFrame) -> float:
    """Share of captions whose answer parsed and held at least one valid proposal."""
    if len(statuses) == 0:
        return float("nan")
    valid = (statuses["status"] == "ok") & (statuses["n_proposals"] > 0)
    return float(valid.mean())


def image_probes(knowledge_base: pd.DataFrame, images_per_caption: int = 10) -> pd.DataFrame:
    """One row per image to draw: every caption of ``knowledge_base`` (its ``to_frame``) once,
    in order of first appearance, ``images_per_caption`` times (``sample_index`` 0..N-1)."""
    if images_per_caption < 1:
        raise ValueError(f"images_per_caption must be >= 1; got {images_per_caption}")
    captions = knowledge_base[["caption_id", "caption"]].astype(str).drop_duplicates("caption_id")
    rows = [
        (_id("image", row.caption_id, row.caption, i), row.caption_id, row.caption, i)
        for row in captions.itertuples(index=False)
        for i in range(images_per_caption)
    ]
    frame = pd.DataFrame(rows, columns=IMAGE_PROBE_COLUMNS)
    frame["sample_index"] = frame["sample_index"].astype("int64")
    return frame


def vqa_probes(knowledge_base: pd.DataFrame, images: pd.DataFrame) -> pd.DataFrame:
    """One row per (bias, caption, image): the bias's question on that caption's image, with
    its choices (JSON list: sorted classes, then ``unknown``) and the authors' prompt.
    ``images``: rows of :func:`image_probes` (``probe_id, caption_id, sample_index``) whose
    images exist; a caption without images gets no rows."""
    per_caption = {
        caption_id: group[["probe_id", "sample_index"]].itertuples(index=False)
        for caption_id, group in images.astype({"caption_id": str}).groupby(
            "caption_id", sort=False
        )
    }
    per_caption = {k: list(v) for k, v in per_caption.items()}
    rows = []
    for row in knowledge_base.itertuples(index=False):
        choices = vqa_choices(row.classes)
        prompt = vqa_prompt(row.question, choices)
        for image in per_caption.get(str(row.caption_id), []):
            rows.append(
                (
                    _id("vqa", row.bias_id, row.caption_id, image.probe_id, prompt),
                    row.bias_id,
                    str(row.caption_id),
                    int(image.sample_index),
                    image.probe_id,
                    row.question,
                    json.dumps(choices),
                    prompt,
                )
            )
    frame = pd.DataFrame(rows, columns=VQA_PROBE_COLUMNS)
    frame["sample_index"] = frame["sample_index"].astype("int64")
    return frame
