"""Demographic instrument on real photos shipped in packages (skimage, matplotlib): face
detection, all faces counted, no-face images, gender/age/skin tone per face, race only from
configured weights, oracle mode, pluggable components, and the validation stage."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from pydantic import ValidationError
from skimage import data
from sklearn.metrics import accuracy_score, recall_score

from genfair.instruments.face_demographics import (
    DETECTORS,
    UNAVAILABLE,
    Box,
    FaceDemographics,
    FaceDemographicsConfig,
    FaceRecord,
    ImageRecord,
    records_to_frames,
    register_detector,
)
from genfair.instruments.validation import (
    LabelledImage,
    package_photo_set,
    validate_instrument,
)


@pytest.fixture(scope="module")
def instrument() -> FaceDemographics:
    return FaceDemographics()


@pytest.fixture(scope="module")
def hopper() -> np.ndarray:
    from matplotlib import cbook

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        return np.asarray(Image.open(f).convert("RGB"))


def test_astronaut_one_face_with_all_attributes(instrument: FaceDemographics) -> None:
    rec = instrument.measure(data.astronaut(), image_id="astronaut")
    assert (rec.status, rec.n_faces, rec.source) == ("ok", 1, "model")
    face = rec.primary
    # Eileen Collins' face lies around x 175-275, y 65-165 of the 512x512 photo
    assert 150 < face.box.x + face.box.w / 2 < 300 and 50 < face.box.y + face.box.h / 2 < 180
    assert face.gender == "female" and 0.5 < face.gender_confidence <= 1
    assert 18 <= face.age_years <= 80 and face.age_group in ("young", "middle-aged", "older")
    assert face.n_skin_pixels > 500 and -90 < face.ita < 90
    assert 1 <= face.monk <= 10 and face.skin_group in ("light", "middle", "dark")
    assert face.race == UNAVAILABLE and face.race_raw is None


def test_no_face_image_is_flagged(instrument: FaceDemographics) -> None:
    rec = instrument.measure(data.chelsea(), image_id="chelsea")
    assert (rec.status, rec.n_faces, rec.primary) == ("no_face", 0, None)
    row = rec.to_row()
    assert row["status"] == "no_face" and row["gender"] is None and row["race"] == UNAVAILABLE


def test_all_faces_counted_primary_is_largest(instrument, hopper) -> None:
    small = np.asarray(Image.fromarray(hopper).resize((256, 300)))
    canvas = np.zeros((512, 512 + 256, 3), np.uint8)
    canvas[:, :512] = data.astronaut()
    canvas[100:400, 512:] = small
    rec = instrument.measure(canvas, image_id="two")
    assert rec.n_faces == 2
    assert rec.primary.box == max((f.box for f in rec.faces), key=lambda b: b.w * b.h)
    images, faces = records_to_frames([rec, instrument.measure(data.coffee(), image_id="cup")])
    assert list(images["n_faces"]) == [2, 0] and len(faces) == 2
    assert set(faces["image_id"]) == {"two"}


def test_inputs_path_pil_float_gray_give_same_boxes(instrument, tmp_path) -> None:
    rgb = data.astronaut()
    path = tmp_path / "astronaut.png"
    Image.fromarray(rgb).save(path)
    boxes = {
        instrument.measure(x, image_id="a").primary.box
        for x in (rgb, str(path), path, Image.fromarray(rgb), rgb / 255.0)
    }
    assert len(boxes) == 1
    gray = instrument.measure(data.astronaut()[..., 1], image_id="g")
    assert gray.n_faces == 1 and gray.primary.ita is None  # no colour, no skin tone
    with pytest.raises(FileNotFoundError, match="missing.png"):
        instrument.measure(tmp_path / "missing.png")
    with pytest.raises(ValueError, match="bad: float images must be in"):
        instrument.measure(rgb * 2.0, image_id="bad")
    with pytest.raises(ValueError, match="x: unsupported pixel type int64"):
        instrument.measure(rgb.astype(np.int64), image_id="x")


def test_dlib_hog_detector_and_skin_preset(hopper) -> None:
    inst = FaceDemographics(
        {"detector": {"name": "dlib_hog"}, "gender_age": None, "skin_groups": "lvlm_facet"}
    )
    rec = inst.measure(hopper, image_id="hopper")
    assert rec.n_faces == 1 and rec.primary.gender is None
    assert rec.primary.skin_group in ("light", "medium", "dark")
    assert inst.measure(data.rocket(), image_id="rocket").status == "no_face"


def test_race_from_user_weights_is_mapped_to_the_papers_races(tmp_path) -> None:
    torch = pytest.importorskip("torch")

    class Planted(torch.nn.Module):
        """18 logits like FairFace's; race logit 5 ("Indian") wins by a margin."""

        def forward(self, x):
            z = torch.zeros(x.shape[0], 18) + x.mean() * 0
            z[:, 5] = 3.0
            return z

    weights = tmp_path / "race.pt"
    torch.jit.trace(Planted(), torch.zeros(1, 3, 224, 224)).save(str(weights))
    inst = FaceDemographics({"gender_age": None, "race": {"weights": str(weights)}})
    face = inst.measure(data.astronaut(), image_id="a").primary
    assert (face.race, face.race_raw) == ("asian", "Indian")  # OMB: South Asian is Asian
    assert face.race_confidence == pytest.approx(math.exp(3) / (math.exp(3) + 6))
    with pytest.raises(FileNotFoundError, match="never downloads"):
        FaceDemographics({"race": {"weights": str(tmp_path / "none.onnx")}})
    with pytest.raises(ValueError, match="no entry for classifier labels"):
        FaceDemographics({"race": {"weights": str(weights), "mapping": {"White": "white"}}})


def test_oracle_mode_reads_recorded_attributes() -> None:
    inst = FaceDemographics({"mode": "oracle", "age_groups": "lvlm_facet"})
    rec = inst.measure(image_id="sim_1", truth={"gender": "Female", "age": 30, "monk": 8})
    face = rec.primary
    assert (rec.source, rec.instrument, rec.status) == ("oracle", "oracle", "ok")
    assert (face.gender, face.age_group, face.skin_group, face.race) == (
        "female",
        "middle-aged",
        "dark",
        UNAVAILABLE,
    )
    two = inst.measure(image_id="sim_2", truth=[{"race": "black"}, {"gender": "male"}])
    assert two.n_faces == 2 and two.primary.race == "black"
    assert inst.measure(image_id="sim_3", truth=[]).status == "no_face"
    with pytest.raises(ValueError, match="sim_4: oracle mode needs"):
        inst.measure(image_id="sim_4")
    with pytest.raises(ValueError, match=r"sim_5: unknown recorded attribute\(s\) \['skin'\]"):
        inst.measure(image_id="sim_5", truth={"skin": 3})
    with pytest.raises(ValueError, match="sim_6: recorded age_group 'young'"):
        inst.measure(image_id="sim_6", truth={"age_group": "young"})


def test_config_fails_fast_naming_the_key() -> None:
    with pytest.raises(ValidationError, match="detectr"):
        FaceDemographicsConfig.model_validate({"detectr": {"name": "opencv_haar"}})
    with pytest.raises(ValidationError, match="unknown; known"):
        FaceDemographicsConfig(detector={"name": "yolo"})
    with pytest.raises(ValidationError, match="cover 1-10"):
        FaceDemographicsConfig(skin_groups={"light": (1, 3), "dark": (5, 10)})
    with pytest.raises(ValidationError, match="strictly decreasing"):
        FaceDemographicsConfig(monk_cuts=[1, 2, 3, 4, 5, 6, 7, 8, 9])
    custom = FaceDemographicsConfig(skin_groups={"lighter": (1, 5), "darker": (6, 10)})
    assert custom.skin_bands == {"lighter": (1, 5), "darker": (6, 10)}


def test_a_new_detector_is_a_registered_class() -> None:
    @register_detector("test_fixed_box")
    class FixedBox:
        name = "test_fixed_box"

        def __init__(self, box: list[int]) -> None:
            self.box = Box(*box)

        def detect(self, rgb):
            return [self.box]

    try:
        inst = FaceDemographics(
            {
                "detector": {"name": "test_fixed_box", "params": {"box": [176, 65, 97, 97]}},
                "gender_age": None,
            }
        )
        rec = inst.measure(data.astronaut(), image_id="a")
    finally:
        DETECTORS.pop("test_fixed_box")
    assert rec.instrument == "test_fixed_box" and rec.primary.box == Box(176, 65, 97, 97)
    assert rec.primary.monk is not None


def test_validation_scores_planted_predictions_by_hand() -> None:
    """6 images, gender: 3 female (2 right), 3 male (3 right); one female has no face."""
    planted = {
        "a": ["female"],
        "b": ["male"],
        "c": [],  # c: truth female, no face found
        "d": ["male"],
        "e": ["male"],
        "f": ["female"],
    }
    truth = {"a": "female", "b": "female", "c": "female", "d": "male", "e": "male", "f": "male"}

    def measure(image, image_id):
        faces = [FaceRecord(box=Box(0, 0, 10, 10), gender=g) for g in planted[image_id]]
        return ImageRecord(image_id, "ok" if faces else "no_face", "model", "planted", faces)

    items = [
        LabelledImage(i, None, {"gender": truth[i], "has_face": True, "race": "white"})
        for i in planted
    ]
    rep = validate_instrument(measure, items)
    g = rep.per_attribute.set_index("attribute")
    # female: a right, b wrong, c missing -> 1/3; male: d, e right, f wrong -> 2/3
    assert g.loc["gender", "accuracy"] == pytest.approx(3 / 6)
    assert g.loc["gender", "n_predicted"] == 5
    assert g.loc["gender", "accuracy_disparity"] == pytest.approx(2 / 3 - 1 / 3)
    assert g.loc["has_face", "accuracy"] == pytest.approx(5 / 6)
    assert g.loc["race", "status"] == "unavailable" and math.isnan(g.loc["race", "accuracy"])
    # independent: scikit-learn on the same labels, missing prediction as its own class
    y = [truth[i] for i in planted]
    p = [planted[i][0] if planted[i] else "<none>" for i in planted]
    assert g.loc["gender", "accuracy"] == pytest.approx(accuracy_score(y, p))
    per = rep.per_group.query("attribute == 'gender'").set_index("group")["recall"]
    rec = recall_score(y, p, labels=["female", "male"], average=None)
    np.testing.assert_allclose(per.loc[["female", "male"]].to_numpy(float), rec)
    assert rep.confusion("gender").loc["female", "<none>"] == 1


def test_validation_on_package_photos(instrument: FaceDemographics) -> None:
    rep = validate_instrument(instrument, package_photo_set())
    attr = rep.per_attribute.set_index("attribute")
    assert attr.loc["has_face", "n"] == 205 and attr.loc["n_faces", "n"] == 5
    assert attr.loc["has_face", "accuracy"] >= 0.95  # measured: 202/205
    groups = rep.per_group.set_index(["attribute", "group"])
    assert groups.loc[("has_face", False), "support"] == 103
    assert groups.loc[("has_face", True), "support"] == 102
    # the per-group recall and accuracy agree with a direct count on the predictions
    pred = rep.predictions
    hf = pred[pred["true_has_face"].notna()]
    direct = (hf["true_has_face"] == hf["pred_has_face"]).mean()
    assert attr.loc["has_face", "accuracy"] == pytest.approx(direct)
    assert isinstance(rep.confusion("has_face"), pd.DataFrame)
    assert attr.loc["gender", "n"] == 2  # only the two documented women are gender-labelled
