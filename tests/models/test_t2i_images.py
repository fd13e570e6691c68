"""Image store, t2i runner (cache, re-asking, resume) and export, with the t2i SIMULATOR."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from genfair.models import build_backend
from genfair.models.base import Completion, OnDone, Request, T2IBackend
from genfair.models.cache import ResponseCache
from genfair.models.config import SimulatedT2IConfig
from genfair.models.images import ImageStore, encode_png, export_images, sha256_bytes
from genfair.models.questions import ImageQuestion
from genfair.models.simulated_images import MONK_SWATCHES, SimulatedT2I
from genfair.models.t2i import IMAGE_RESPONSE_COLUMNS, generate_images, prompt_call


def simulator(**policy: Any) -> SimulatedT2I:
    settings = {"attributes": {"gender": {"female": 0.2, "male": 0.8}}, **policy}
    config = SimulatedT2IConfig(backend="simulated", size=16, policy={"objective": settings})
    backend = build_backend(config)
    assert isinstance(backend, SimulatedT2I)
    return backend


def calls(n: int, prompt: str = "a portrait of a doctor", max_attempts: int = 1) -> list:
    return [
        prompt_call(
            "p1", prompt, i, max_attempts=max_attempts, question=ImageQuestion(policy="objective")
        )
        for i in range(n)
    ]


class Counting(T2IBackend):
    """Wraps a backend; counts the requests it is asked; may die after ``fail_after``."""

    def __init__(self, inner: T2IBackend, fail_after: int | None = None):
        self.inner, self.fail_after, self.asked = inner, fail_after, 0
        self.simulated = inner.simulated

    @property
    def fingerprint(self) -> dict[str, Any]:
        return self.inner.fingerprint

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        for request in requests:
            if self.fail_after is not None and self.asked >= self.fail_after:
                raise KeyboardInterrupt  # a run killed mid-stage
            self.asked += 1
            self.inner.complete([request], on_done)


# --- image store -------------------------------------------------------------------------


def test_store_is_content_addressed_atomic_and_idempotent(tmp_path) -> None:
    store = ImageStore(tmp_path / "images")
    png = encode_png(Image.new("RGB", (4, 4), (1, 2, 3)))
    sha = store.put(png)
    assert sha == sha256_bytes(png)
    assert store.path(sha) == tmp_path / "images" / sha[:2] / f"{sha}.png"
    assert store.read(sha) == png and sha in store
    assert store.put(png) == sha  # the same bytes: one file
    assert [p.name for p in (tmp_path / "images").rglob("*")] == [sha[:2], f"{sha}.png"]
    assert store.open(sha).getpixel((0, 0)) == (1, 2, 3)
    with pytest.raises(ValueError, match="SHA-256"):
        store.path("../../etc/passwd")
    with pytest.raises(FileNotFoundError, match="delete the cache file"):
        store.read("0" * 64)


def test_png_encoding_is_deterministic() -> None:
    image = Image.new("RGB", (8, 8), (10, 20, 30))
    assert encode_png(image) == encode_png(image.copy())


# --- runner + simulator ------------------------------------------------------------------


def test_simulator_recovers_the_planted_distribution(tmp_path) -> None:
    n, p = 1500, 0.2
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        frame = generate_images(simulator(), cache, calls(n), seed=7)
    assert list(frame.columns) == IMAGE_RESPONSE_COLUMNS
    assert (frame["status"] == "ok").all() and frame["image"].notna().all()
    genders = frame["true_attributes"].map(lambda s: json.loads(s)["gender"])
    share = float((genders == "female").mean())
    assert abs(share - p) < 4 * np.sqrt(p * (1 - p) / n)  # binomial: 4 standard errors
    assert (frame["width"] == 16).all() and (frame["height"] == 16).all()
    assert frame["image"].nunique() > 1  # different draws, different pictures


def test_simulated_image_is_labelled_and_face_colour_is_the_skin_tone(tmp_path) -> None:
    backend = simulator(attributes={"skin_tone": {"monk_9": 1.0}, "race": {"black": 1.0}})
    assert backend.simulated
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        frame = generate_images(backend, cache, calls(1), seed=1)
        image = ImageStore.beside(cache).open(frame.loc[0, "image"])
    assert json.loads(frame.loc[0, "true_attributes"]) == {"race": "black", "skin_tone": "monk_9"}
    assert image.getpixel((8, 6)) == MONK_SWATCHES["monk_9"]  # the centre of the face oval
    assert image.getpixel((8, 15)) != MONK_SWATCHES["monk_9"]  # the SIMULATED banner


def test_refusals_are_re_asked_until_an_image_exists(tmp_path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        frame = generate_images(
            simulator(refusal_rate=0.5), cache, calls(200, max_attempts=20), seed=3
        )
    assert (frame["status"] == "ok").all()  # 0.5**20 per call: never in practice
    assert frame["attempts"].max() > 1
    # about half the first attempts were refused: the mean attempt count of a geometric(0.5)
    assert 1.6 < frame["attempts"].mean() < 2.4


def test_refused_after_max_attempts_is_recorded(tmp_path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        frame = generate_images(
            simulator(refusal_rate=1.0), cache, calls(3, max_attempts=4), seed=3
        )
        assert len(cache) == 12  # refusals are cached: a rerun does not ask again
    assert (frame["status"] == "refused").all() and (frame["attempts"] == 4).all()
    assert frame["image"].isna().all() and frame["finish_reason"].eq("content_filter").all()


def test_no_person_images_have_empty_truth(tmp_path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        frame = generate_images(simulator(no_person_rate=1.0), cache, calls(2), seed=3)
    assert (frame["status"] == "ok").all() and (frame["true_attributes"] == "{}").all()


def test_interrupted_run_resumes_without_redrawing(tmp_path) -> None:
    store_dir = tmp_path / "images"
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        dying = Counting(simulator(), fail_after=7)
        with pytest.raises(KeyboardInterrupt):
            generate_images(
                dying, cache, calls(20), seed=5, store=ImageStore(store_dir), chunk_size=4
            )
        assert len(cache) == 7  # every finished image was committed at once
        resumed = Counting(simulator())
        frame = generate_images(
            resumed, cache, calls(20), seed=5, store=ImageStore(store_dir), chunk_size=4
        )
        assert resumed.asked == 13
        again = Counting(simulator())
        assert generate_images(again, cache, calls(20), seed=5, store=ImageStore(store_dir)).equals(
            frame
        )
        assert again.asked == 0
    with ResponseCache(tmp_path / "fresh.sqlite") as fresh:  # same seed, no cache: same images
        uncached = generate_images(simulator(), fresh, calls(20), seed=5)
    assert uncached["image"].tolist() == frame["image"].tolist()


def test_a_pruned_store_is_a_clear_error(tmp_path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        frame = generate_images(simulator(), cache, calls(1), seed=5)
        ImageStore.beside(cache).path(frame.loc[0, "image"]).unlink()
        with pytest.raises(FileNotFoundError, match="not in the image store"):
            generate_images(simulator(), cache, calls(1), seed=5)


class Broken(T2IBackend):
    fingerprint = {"backend": "broken", "model_id": "x"}  # type: ignore[assignment]

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        on_done(requests[0], Completion(status="ok", png=b"not a png"))
        on_done(requests[1], Completion(status="ok"))


def test_a_backend_sending_garbage_gives_uncached_errors(tmp_path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        frame = generate_images(Broken(), cache, calls(2), seed=1)
        assert len(cache) == 0
    assert frame["status"].tolist() == ["error", "error"]
    assert "not a readable image" in frame.loc[0, "error"]
    assert "without bytes" in frame.loc[1, "error"]


def test_an_llm_backend_is_refused(tmp_path) -> None:
    from genfair.models.config import SimulatedModelConfig

    llm = build_backend(
        SimulatedModelConfig(backend="simulated", policy={"objective": {"accuracy": 1}})
    )
    with (
        ResponseCache(tmp_path / "c.sqlite") as cache,
        pytest.raises(TypeError, match="text-to-image"),
    ):
        generate_images(llm, cache, calls(1), seed=1)


def test_unknown_policy_names_the_configured_ones(tmp_path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache, pytest.raises(KeyError, match="objective"):
        generate_images(
            simulator(),
            cache,
            [prompt_call("p", "x", question=ImageQuestion(policy="nope"))],
            seed=1,
        )


# --- export ------------------------------------------------------------------------------


def test_export_writes_exactly_the_used_images(tmp_path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        frame = generate_images(
            simulator(refusal_rate=0.5), cache, calls(30, max_attempts=1), seed=9
        )
        out = tmp_path / "out"
        out.mkdir()
        (out / ("f" * 64 + ".png")).write_bytes(b"stale")
        index = export_images(frame, cache, out)
    ok = frame[frame["status"] == "ok"]
    assert 0 < len(ok) < 30 and len(index) == len(ok)
    assert sorted(p.name for p in out.iterdir()) == sorted(set(ok["image"] + ".png"))
    for row in index.itertuples():
        assert sha256_bytes((out / row.file).read_bytes()) == row.image
    assert index["true_attributes"].tolist() == ok["true_attributes"].tolist()


def test_export_needs_the_image_column(tmp_path) -> None:
    with pytest.raises(KeyError, match="generate_images"):
        export_images(pd.DataFrame({"text": ["x"]}), ImageStore(tmp_path), tmp_path / "o")


@pytest.mark.parametrize(
    "name",
    [
        "diffusers_sd15",
        "openai_dalle3",
        "simulated_t2i",
        "hf_vlm_llava_1_5_7b",
        "openai_gpt4o_vision",
        "simulated_vlm",
    ],
)
def test_example_model_configs_validate(name: str) -> None:
    from pathlib import Path

    import yaml
    from pydantic import TypeAdapter

    from genfair.models.config import ModelConfig

    raw = yaml.safe_load(
        (Path(__file__).parents[2] / "conf" / "model" / f"{name}.yaml").read_text()
    )
    config = TypeAdapter(ModelConfig).validate_python(raw)
    assert config.modality == raw["modality"] and config.backend == raw["backend"]


def test_t2i_policy_probabilities_must_sum_to_one() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="gender: probabilities sum to 0.9, not 1"):
        SimulatedT2IConfig(
            backend="simulated", policy={"k": {"attributes": {"gender": {"m": 0.5, "f": 0.4}}}}
        )
    with pytest.raises(ValidationError, match="attributes.skin"):
        SimulatedT2IConfig(backend="simulated", policy={"k": {"attributes": {"skin": {"m": 1.0}}}})
