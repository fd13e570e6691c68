"""The image-quality and image-semantics instruments on tiny random-weight CLIP, DINOv2 and
IQA checkpoints built in code and loaded from their folders: shapes, determinism, the formulas
against transformers' own forward passes, offline loading and its one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from PIL import Image  # noqa: E402

from genfair.errors import ConfigError  # noqa: E402
from genfair.instruments.image_quality import (  # noqa: E402
    ImageQuality,
    ImageQualityConfig,
    face_crop,
)
from genfair.instruments.image_semantics import (  # noqa: E402
    ImageSemantics,
    ImageSemanticsConfig,
    reference_similarity,
)
from tests.support.tiny_vision import tiny_clip, tiny_dino, tiny_iqa  # noqa: E402


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny_vision")
    return {
        "clip": tiny_clip(root / "clip"),
        "dino": tiny_dino(root / "dino"),
        "iqa": tiny_iqa(root / "iqa"),
    }


def _images(n: int) -> list[Image.Image]:
    rng = np.random.default_rng(5)
    return [
        Image.fromarray(rng.integers(0, 256, (40 + k, 36, 3), dtype=np.uint8)) for k in range(n)
    ]


PROMPTS = ["a photo of a nurse", "a photo of a young male nurse", "a photo of a cat"]


def test_prompt_similarity_is_clipmodels_cosine(folders) -> None:
    from transformers import CLIPModel, CLIPProcessor

    sem = ImageSemantics(ImageSemanticsConfig(clip=str(folders["clip"]), batch_size=2))
    images = _images(3)
    got = sem.prompt_similarity(images, PROMPTS)
    assert got.shape == (3,) and np.all(np.abs(got) <= 1 + 1e-6)
    model = CLIPModel.from_pretrained(folders["clip"]).eval()
    processor = CLIPProcessor.from_pretrained(folders["clip"])
    inputs = processor(text=PROMPTS, images=images, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model(**inputs)
    want = (out.image_embeds * out.text_embeds).sum(-1).numpy()  # both L2-normalised
    np.testing.assert_allclose(got, want, atol=1e-5)
    again = ImageSemantics(sem.config)  # a fresh load, the same batches: the same bytes
    np.testing.assert_array_equal(again.prompt_similarity(images, PROMPTS), got)


def test_dino_embeddings_and_reference_similarity(folders) -> None:
    from transformers import Dinov2Model

    sem = ImageSemantics(ImageSemanticsConfig(dino=str(folders["dino"]), batch_size=2))
    assert sem.measures == {"prompt_similarity": False, "reference": True}
    images = _images(5)
    emb = sem.embed(images)
    assert emb.shape == (5, 32)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(sem.embed(images), emb)  # deterministic
    pixels = sem._load("dino")[1](images=[i.convert("RGB") for i in images], return_tensors="pt")
    with torch.no_grad():
        cls = Dinov2Model.from_pretrained(folders["dino"]).eval()(**pixels).pooler_output.numpy()
    np.testing.assert_allclose(emb, cls / np.linalg.norm(cls, axis=1, keepdims=True), atol=1e-5)
    # mean pairwise cosine to the references, by hand
    sims = reference_similarity(emb[:2], emb[2:])
    by_hand = [np.mean([float(emb[i] @ emb[j]) for j in (2, 3, 4)]) for i in (0, 1)]
    np.testing.assert_allclose(sims, by_hand, atol=1e-12)
    assert np.isnan(reference_similarity(emb[:2], emb[:0])).all()


def test_clip_iqa_is_the_softmax_over_the_antonym_pair(folders) -> None:
    from transformers import CLIPModel, CLIPProcessor

    quality = ImageQuality(ImageQualityConfig(checkpoint=str(folders["clip"]), batch_size=2))
    images = _images(3)
    got = quality.score(images)
    assert got.shape == (3,) and np.all((got > 0) & (got < 1))
    model = CLIPModel.from_pretrained(folders["clip"]).eval()
    processor = CLIPProcessor.from_pretrained(folders["clip"])
    inputs = processor(text=["Good photo.", "Bad photo."], images=images, return_tensors="pt",
                       padding=True)  # fmt: skip
    with torch.no_grad():
        want = model(**inputs).logits_per_image.softmax(-1)[:, 0].numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_array_equal(ImageQuality(quality.config).score(images), got)


def test_regression_iqa_returns_the_models_output(folders) -> None:
    from transformers import ViTForImageClassification

    quality = ImageQuality(ImageQualityConfig(checkpoint=str(folders["iqa"]), kind="regression"))
    images = _images(4)
    got = quality.score(images)
    assert got.shape == (4,)
    pixels = quality._load()[1](images=[i.convert("RGB") for i in images], return_tensors="pt")
    with torch.no_grad():
        want = ViTForImageClassification.from_pretrained(folders["iqa"]).eval()(**pixels)
    np.testing.assert_allclose(got, want.logits[:, 0].numpy(), atol=1e-5)
    with pytest.raises(ConfigError, match="num_labels: 1"):
        ImageQuality(ImageQualityConfig(checkpoint=str(folders["dino"]), kind="regression")).score(
            images
        )


def test_face_crop_widens_the_box_inside_the_image() -> None:
    image = Image.new("RGB", (100, 80))
    assert face_crop(image, (40, 30, 20, 20), 0.25).size == (30, 30)
    assert face_crop(image, (0, 0, 20, 20), 0.5).size == (30, 30)  # clipped at the border


def test_never_fetched_one_line_errors(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    with pytest.raises(
        ConfigError, match=r"instruments\.image_semantics\.clip.*local Hugging Face cache"
    ):
        ImageSemantics(ImageSemanticsConfig(clip="someone/not-cached-clip")).prompt_similarity(
            _images(1), ["a"]
        )
    with pytest.raises(
        ConfigError, match=r"instruments\.image_quality\.checkpoint.*config\.json missing"
    ):
        ImageQuality(ImageQualityConfig(checkpoint=str(tmp_path))).score(_images(1))


def test_nothing_configured_measures_nothing() -> None:
    assert not any(ImageQuality().measures.values())
    assert not any(ImageSemantics().measures.values())
    oracle = ImageQuality(ImageQualityConfig(mode="oracle"))
    assert oracle.measures == {"image": True, "face": True} and "SIMULATED" in oracle.name


def test_validation_checks_reach_the_reports_instruments_section(folders, tmp_path: Path) -> None:
    from types import SimpleNamespace

    from genfair.instruments.image_validation import DEGRADATIONS
    from genfair.study.curation_stages import _validate_image_instruments
    from genfair.study.layout import Layout
    from genfair.study.report import instruments_view

    configured = SimpleNamespace(
        instruments={
            "image_quality": {"checkpoint": str(folders["clip"])},
            "image_semantics": {"clip": str(folders["clip"]), "dino": str(folders["dino"])},
        },
        models={},
        methodologies=[],
    )
    layout = Layout(tmp_path)
    _validate_image_instruments(configured, layout)
    view = {
        v["name"]: v["tables"][0] for v in instruments_view(configured, layout, set())["validation"]
    }
    quality, semantics = view["image_quality"], view["image_semantics"]
    assert [r[0]["text"] for r in quality["rows"]] == list(DEGRADATIONS)
    assert [r[0]["text"] for r in semantics["rows"]] == ["caption_retrieval", "copy_retrieval"]
    assert "5 photos shipped in packages" in quality["caption"]
    checks = pd.read_parquet(layout.instruments / "image_semantics/checks.parquet")
    assert checks["n"].eq(5).all() and checks["accuracy"].between(0, 1).all()
    # without weights: no checks, and the section says why
    _validate_image_instruments(SimpleNamespace(instruments={"image_quality": {}}), layout)
    view = {
        v["name"]: v["tables"][0] for v in instruments_view(configured, layout, set())["validation"]
    }
    assert "not configured" in str(view["image_quality"]["rows"])


def _copy(folder: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(folder, tmp_path / "checkpoint"))


def test_a_checkpoint_asking_to_run_its_own_code_is_refused_without_a_prompt(
    folders, tmp_path: Path, monkeypatch
) -> None:
    """``auto_map`` in config.json: transformers asked "Do you wish to run the custom code?
    [y/N]" inside the stage before; now trust_remote_code is off and it is one line."""
    import json

    folder = _copy(folders["dino"], tmp_path)
    config = json.loads((folder / "config.json").read_text())
    # an architecture transformers does not ship: only the folder's own code could build it
    config["model_type"] = "evil_dino"
    config["auto_map"] = {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "evil.py").write_text("raise SystemExit('custom code ran')\n")

    def no_prompt(*_: object) -> str:
        raise AssertionError("prompted")

    monkeypatch.setattr("builtins.input", no_prompt)
    semantics = ImageSemantics(ImageSemanticsConfig(dino=str(folder)))
    with pytest.raises(ConfigError) as error:
        semantics.embed(_images(1))
    assert str(error.value) == (
        f"params.yaml: instruments.image_semantics.dino: {folder} asks to run its own code "
        "(auto_map in config.json), which genfair never does: use a checkpoint of an "
        "architecture transformers ships"
    )


def test_a_malicious_pickle_in_a_checkpoint_is_refused_in_one_line(folders, tmp_path: Path) -> None:
    """A pytorch_model.bin that would run a command when unpickled: torch's weights-only
    loader refuses it (never run); before, the stage ended "unexpected UnpicklingError"."""
    import os
    import pickle

    class Evil:
        def __reduce__(self) -> tuple:
            return os.system, ("touch /tmp/genfair-pickle-ran",)

    folder = _copy(folders["iqa"], tmp_path)
    (folder / "model.safetensors").unlink()
    torch.save({"weights": Evil()}, folder / "pytorch_model.bin", pickle_module=pickle)
    quality = ImageQuality(ImageQualityConfig(kind="regression", checkpoint=str(folder)))
    with pytest.raises(ConfigError) as error:
        quality.score(_images(1))
    assert str(error.value).startswith(
        f"params.yaml: instruments.image_quality.checkpoint: {folder}: a weights file holds "
        "a pickle of more than tensors, refused unread"
    ) and "\n" not in str(error.value)
    assert not Path("/tmp/genfair-pickle-ran").exists()
