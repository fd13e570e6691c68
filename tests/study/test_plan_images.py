"""``genfair plan`` for text-to-image runs (issue 43.5): the bytes the new images will take
(measured from the model's cached images, else estimated from its pixels), the instrument's
CPU to measure every image of the run, and the ``generation.max_disk_gb`` guard that refuses
a ``generate`` before its first call."""

from __future__ import annotations

import copy

import pytest

from genfair.cli import compose
from genfair.io import read_parquet
from genfair.models import build_backend
from genfair.models.base import Completion
from genfair.models.images import ImageStore
from genfair.study.answers import cache_opener
from genfair.study.layout import Layout
from genfair.study.plan import plan, table, totals
from genfair.study.sizing import INSTRUMENT_CPU, PNG_BYTES_PER_PIXEL
from genfair.study.steps import generate, make_probes
from genfair.study_params import ConfigError, StudyParams, load_params
from tests.support.conf import with_runs

ENDPOINT = {
    "modality": "t2i",
    "backend": "openai",
    "model_id": "drawer",
    "base_url": "http://127.0.0.1:9/v1",  # nothing listens: a call would fail
    "api_key_env": None,
    "size": "1024x1024",
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The smoke study's FACT-OR-FAIR on the simulated T2I model (composed once)."""
    overrides = [
        "scale=smoke",
        *[f"~model@models.{m}" for m in ("smollm2", "simulated_llm", "simulated_vlm")],
    ]
    path = tmp_path_factory.mktemp("plan") / "params.yaml"
    raw = load_params(compose(overrides, path)).model_dump(mode="json")
    raw["methodologies"] = {"fact_or_fair": raw["methodologies"]["fact_or_fair"]}
    return raw


def _params(base: dict, generation: dict | None = None) -> StudyParams:
    raw = copy.deepcopy(base)
    raw["models"]["drawer"] = ENDPOINT
    raw["generation"] = generation or {}
    return StudyParams.model_validate(with_runs(raw))


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))


def _entries(params: StudyParams) -> int:
    with cache_opener(params)() as cache:
        return len(cache)


def test_a_t2i_run_plans_bytes_and_instrument_hours(base: dict) -> None:
    params = _params(base)
    rows = {r.model: r for r in plan(params)}
    drawer, sim = rows["drawer"], rows["simulated_t2i"]
    assert drawer.images == sim.images > 0
    # a real model with no cached image: its configured pixels x the photos' bytes per pixel
    assert drawer.image_bytes == round(drawer.images * PNG_BYTES_PER_PIXEL * 1024**2)
    assert drawer.image_bytes_rule == "estimate: 1024x1024 x 1.26 B/px"
    # every image measured by the face instrument (mode: model), no reading cached yet
    assert drawer.instrument_images == drawer.images and drawer.instrument_cached == 0
    per_image = INSTRUMENT_CPU["face_demographics"].seconds(1024**2)
    assert drawer.instrument_seconds == pytest.approx(drawer.images * per_image)
    # the simulator: 64-px images, read in oracle mode (no pixel measured)
    assert sim.image_bytes == round(sim.images * PNG_BYTES_PER_PIXEL * 64**2)
    assert sim.instrument_seconds == 0.0 and "oracle" in sim.instrument_rule
    total = totals(list(rows.values()))
    assert total["image_bytes"] == drawer.image_bytes + sim.image_bytes
    text = table(list(rows.values()))
    assert "image GB" in text and "instr. core-h" in text and "1.26 B/px" in text


def test_cached_images_give_the_measured_size_and_still_count_for_the_instrument(
    base: dict, tmp_path
) -> None:
    """After the simulator drew its images, nothing is left to store, but the instrument
    still measures each one; the model's bytes per image is its cached images' mean."""
    params = _params(base)
    layout = Layout(tmp_path)
    make_probes(params, "fact_or_fair", layout)
    generate(params, "simulated_t2i", "fact_or_fair", layout)
    (before,) = plan(_params(base), models=["drawer"])
    (row,) = plan(params, models=["simulated_t2i"])
    assert row.to_send == 0 and row.image_bytes == 0
    assert row.instrument_images == before.images  # every image of the run, cached or not
    assert row.image_bytes_rule.startswith("estimate")  # nothing to send: nothing observed

    # the drawer's own images in the cache: its mean stored size replaces the estimate
    backend = build_backend(params.model("drawer"))
    model_key = f"openai:{backend.fingerprint['model_id']}"
    with cache_opener(params)() as cache:
        store = ImageStore.beside(cache)
        for i, size in enumerate((1000, 3000)):
            image = store.put(bytes([i]) * size)
            cache.put(f"k{i}", model_key, Completion(status="ok", image=image))
    (drawer,) = plan(params, models=["drawer"])
    assert drawer.image_bytes == drawer.images * 2000
    assert drawer.image_bytes_rule == "mean of 2 cached images"


def test_max_disk_gb_refuses_generate_before_any_call(base: dict, tmp_path) -> None:
    layout = Layout(tmp_path)
    (row,) = plan(_params(base), models=["drawer"])
    limit = row.image_bytes / 2 / 1e9
    params = _params(base, {"max_disk_gb": limit})
    make_probes(params, "fact_or_fair", layout)
    with pytest.raises(ConfigError) as refused:
        generate(params, "simulated_t2i", "fact_or_fair", layout)
    message = str(refused.value)
    assert f"generation.max_disk_gb is {limit:g} and the plan's new images take" in message
    assert "conf/config.yaml" in message and "genfair compose" in message
    assert "\n" not in message
    assert _entries(params) == 0
    assert not layout.responses("simulated_t2i", "fact_or_fair").exists()
    roomy = _params(base, {"max_disk_gb": 1000.0})
    generate(roomy, "simulated_t2i", "fact_or_fair", layout)  # within the limit: it runs
    assert _entries(roomy) > 0


@pytest.mark.parametrize("value", ["nan", "inf", -1.0, 0.0])
def test_max_disk_gb_must_be_a_finite_positive_number(base: dict, value: object) -> None:
    from genfair.frame import StudyFrame, validate

    raw = copy.deepcopy(base)
    raw["generation"] = {"max_disk_gb": value}
    with pytest.raises(ConfigError, match=r"conf/config.yaml: generation.max_disk_gb: Input"):
        validate(StudyFrame, raw, "conf/config.yaml")


def test_images_whose_readings_are_cached_cost_no_instrument_time(base: dict, tmp_path) -> None:
    """A simulator whose pixels the real instrument measures (``pixels: realistic``): before
    ``label`` every image of the run is still to measure; after it, the readings cache holds
    each one (the same keys ``label`` used) and the plan spends no instrument CPU on them."""
    from genfair.study.steps import label

    raw = copy.deepcopy(base)
    raw["models"]["simulated_t2i"].update(pixels="realistic", size=128)
    params = StudyParams.model_validate(with_runs(raw))
    layout = Layout(tmp_path)
    make_probes(params, "fact_or_fair", layout)
    generate(params, "simulated_t2i", "fact_or_fair", layout)
    (drawn,) = plan(params, models=["simulated_t2i"])
    assert drawn.to_send == 0 and drawn.instrument_images > 0
    assert drawn.instrument_cached == 0 and drawn.instrument_seconds > 0
    label(params, "simulated_t2i", "fact_or_fair", layout)
    (measured,) = plan(params, models=["simulated_t2i"])
    assert measured.instrument_cached == len(
        set(read_parquet(layout.responses("simulated_t2i", "fact_or_fair"))["image"].dropna())
    )
    assert measured.instrument_seconds < drawn.instrument_seconds
    assert "readings cached" in table([measured])
