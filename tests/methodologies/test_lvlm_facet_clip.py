"""lvlm_facet CLIP zero-shot baseline with a tiny random-weight CLIP built in code (no hub
download): its answers equal transformers' own CLIPModel forward, through the backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from PIL import Image  # noqa: E402

from genfair.methodologies.lvlm_facet.clip_baseline import (  # noqa: E402
    ClipZeroShot,
    ClipZeroShotBackend,
    load_clip,
)
from genfair.methodologies.lvlm_facet.matching import AnswerMatcher, make_encoder  # noqa: E402
from genfair.models.base import Request  # noqa: E402
from genfair.models.images import vlm_message  # noqa: E402
from tests.support.tiny_vision import tiny_clip  # noqa: E402

CLASSES = ["nurse", "basketball_player", "singer", "gardener", "student"]


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny CLIP (2 layers, width 32, 32x32 images) with a character-level tokenizer."""
    return tiny_clip(tmp_path_factory.mktemp("tiny_clip"))


def _images(n: int) -> list[Image.Image]:
    rng = np.random.default_rng(3)
    return [
        Image.fromarray(rng.integers(0, 256, (40 + k, 36, 3), dtype=np.uint8)) for k in range(n)
    ]


def test_zero_shot_equals_clipmodel_forward(clip_dir: Path) -> None:
    model, processor = load_clip(clip_dir)
    classifier = ClipZeroShot(model, processor, CLASSES)
    assert classifier.prompts[1] == "a photo of a basketball player"
    images = _images(6)
    probs = classifier.probabilities(images)
    inputs = processor(text=classifier.prompts, images=images, return_tensors="pt", padding=True)
    with torch.inference_mode():
        reference = model(**inputs).logits_per_image.softmax(dim=-1).numpy()
    assert np.allclose(probs, reference, atol=1e-5)
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    assert classifier.classify(images) == [CLASSES[k] for k in reference.argmax(axis=1)]
    raw = ClipZeroShot(model, processor, CLASSES, class_display="raw")
    assert raw.prompts[1] == "a photo of a basketball_player"


def test_backend_answers_are_matched_exactly(clip_dir: Path, tmp_path: Path) -> None:
    paths = []
    for k, image in enumerate(_images(3)):
        paths.append(tmp_path / f"img{k}.png")
        image.save(paths[-1])
    backend = ClipZeroShotBackend.from_path(clip_dir, classes=CLASSES, batch_size=2)
    requests = [Request(messages=(vlm_message("Give me a one-word label", [p]),)) for p in paths]
    done: list[tuple[Request, object]] = []
    backend.complete(requests, lambda r, c: done.append((r, c)))
    assert [c.status for _, c in done] == ["ok"] * 3
    answers = [c.text for _, c in done]
    with Image.open(paths[0]) as first:
        assert answers[0] == backend.classifier.classify([first.convert("RGB")])[0]
    assert backend.fingerprint["backend"] == "clip_zero_shot"
    encoder = make_encoder(f"clip_text:{clip_dir}")
    matched = AnswerMatcher("class", encoder).match(answers)
    assert (matched["tier"] == "exact").all() and matched["label"].tolist() == answers
    # a request without its one image is an error completion, not a crash
    bad: list = []
    backend.complete(
        [Request(messages=({"role": "user", "content": "no image"},))], lambda r, c: bad.append(c)
    )
    assert bad[0].status == "error" and "exactly one image" in bad[0].error


def test_clip_text_encoder_rows_are_unit_vectors(clip_dir: Path) -> None:
    encoder = make_encoder(f"clip_text:{clip_dir}")
    vectors = encoder.encode(["a photo of a nurse", "singer", "x"])
    assert vectors.shape == (3, 16) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert encoder.name == f"clip_text:{clip_dir.name}"


def test_missing_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no CLIP checkpoint"):
        load_clip(tmp_path)


def test_clip_model_kind_runs_lvlm_facet_direct_question_only(
    clip_dir: Path, tmp_path: Path
) -> None:
    """``backend: clip`` in a model config builds the zero-shot backend; lvlm_facet asks it
    the direct question only (the paper's single-choice N/A) and scores its class answers."""
    from genfair.curation.facet import FacetConfig, curate_facet
    from genfair.curation.facet_fixture import build_facet_fixture
    from genfair.methodologies import get_methodology
    from genfair.methodologies.base import ModelInfo, StepContext
    from genfair.methodologies.lvlm_facet.config import LvlmFacetConfig
    from genfair.models import ResponseCache, build_backend
    from genfair.models.config import ClipVLMConfig

    release = build_facet_fixture(tmp_path / "release")
    curate_facet(FacetConfig(release_dir=release), tmp_path / "curated", progress=False)
    config = LvlmFacetConfig(
        persons=str(tmp_path / "curated" / "persons.parquet"),
        images_dir=str(release / "images"),
        classes="all",
    )
    model = ClipVLMConfig.model_validate(
        {
            "modality": "vlm",
            "backend": "clip",
            "model_id": "tiny-random-clip",
            "path": str(clip_dir),
            "batch_size": 2,
        }
    )
    backend = build_backend(model)
    assert isinstance(backend, ClipZeroShotBackend) and len(backend.classifier.classes) == 52
    method = get_methodology("lvlm_facet")
    probes = method.build_probes(config, 1)
    with ResponseCache(tmp_path / "cache" / "responses.sqlite") as cache:
        ctx = StepContext(
            model=ModelInfo("clip", "vlm", "clip", False),
            seed=1,
            cache_dir=tmp_path / "cache",
            image_dir=tmp_path / "images",
            backend=backend,
            cache=cache,
        )
        responses = method.generate(probes, config, ctx)
    direct = probes[probes["prompt"] == "direct"]
    assert (
        sorted(responses["probe_id"]) == sorted(direct["probe_id"])
        and (responses["status"] == "ok").all()
    )
    first = direct.iloc[0]
    with Image.open(first["image_path"]) as image:
        expected = backend.classifier.classify([image.convert("RGB")])[0]
    assert responses.set_index("probe_id").loc[first["probe_id"], "text"] == expected
    labels = method.label(probes, responses, config, ctx)
    assert (labels["tier"] == "exact").all() and (labels["label"] == labels["answer"]).all()
    result = method.metrics(labels, config, ctx)
    assert set(result.scores["prompt"]) == {"direct"} and not result.summary["simulated"]
