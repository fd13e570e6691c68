"""SIMULATOR: a planted-bias text-to-image model.

Not a model. Its bias is configuration: for each prompt kind (an
:class:`~genfair.models.questions.ImageQuestion`'s ``plant``, from the methodology's
``simulated`` config) a distribution over the values of each demographic attribute (gender, race,
age, skin tone). Each image draws every attribute independently from those distributions, with a
generator seeded by the request seed (so the same request always gives the same draw, and a re-ask a
new one), and records the draw as ``true_attributes``: the ground truth that the
distribution metrics computed from it must recover, and that a classifier's labels can be
scored against.

The picture is obviously synthetic: a striped background, a plain oval "face" and a
``SIMULATED`` banner. The face is filled with the colour of the drawn skin-tone group (Monk
Skin Tone scale swatches), so a pixel-based skin-tone instrument has something honest to
measure; nothing else about the drawn attributes is hidden in the pixels.

Realistic pixels (``pixels: realistic``, e.g. ``size: 1024``: a rehearsal of a real model's
costs): each image is a full-size composition (:func:`compose`) of a photo that ships inside an
installed package (:mod:`genfair.models.photos`), chosen to match the draw where the photo's
documented labels allow (:func:`choose_photo`), pasted at a scale and place, on a background and
under pixel noise, all drawn from the request's seed: no two images are the same file. The real
instruments measure these images (:func:`genfair.study.context.instruments` keeps them in model
mode); the draw is still recorded as ``true_attributes``, and a narrow ``SIMULATED`` banner runs
along the bottom edge. The shipped photos document gender ``female`` only (two photos); a draw
they cannot depict (a man, any age or skin tone) gets a face whose attributes no package
documents (an LFW crop), so only planted ``female`` is in the pixels, by construction.

Open-set biases (OpenBias, paper 003; an
:class:`~genfair.models.questions.OpenSetImageQuestion`'s ``plant``): for any bias the proposer
names, a known class distribution per (bias, caption), drawn per image and recorded as
``true_attributes = {bias_id: class}`` (:func:`planted_distribution`).
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from genfair.models.base import Completion, Request, Simulator, T2IBackend, derive_seed
from genfair.models.config import (
    SimulatedOpenSetBias,
    SimulatedOpenSetPolicy,
    SimulatedScores,
    SimulatedT2IConfig,
    SimulatedT2IPolicy,
)
from genfair.models.images import encode_png
from genfair.models.photos import NO_PERSON, PersonPhoto, load_photo, people
from genfair.models.questions import AskedBias, ImageQuestion, OpenSetImageQuestion

#: Monk Skin Tone scale swatches (Monk 2019, skintone.google), MST 1 (lightest) .. 10
MONK_SWATCHES = {
    "monk_1": (246, 237, 228),
    "monk_2": (243, 231, 219),
    "monk_3": (247, 234, 208),
    "monk_4": (234, 218, 186),
    "monk_5": (215, 189, 150),
    "monk_6": (160, 126, 86),
    "monk_7": (130, 92, 67),
    "monk_8": (96, 65, 52),
    "monk_9": (58, 49, 42),
    "monk_10": (41, 36, 32),
}
#: three-group names used by coarser skin-tone studies, drawn with a representative swatch
SKIN_GROUP_SWATCHES = {
    "light": MONK_SWATCHES["monk_2"],
    "medium": MONK_SWATCHES["monk_5"],
    "dark": MONK_SWATCHES["monk_9"],
}
_NEUTRAL_FACE = (200, 200, 200)
REFUSAL = "SIMULATED refusal: this request was blocked by the simulated content policy."


class SimulatedT2I(Simulator, T2IBackend):
    config: SimulatedT2IConfig
    kind = "simulated t2i model"

    @property
    def fingerprint(self) -> dict[str, Any]:
        return self._fingerprint(
            {"policy": self.config.policy, "open_set": self.config.open_set}, **self.settings()
        )

    def settings(self) -> dict[str, Any]:
        """What shapes the pixels (``pixels`` only when realistic: the synthetic images keep
        the cache keys they had before the option existed)."""
        realistic = {"pixels": self.config.pixels} if self.config.measured else {}
        return {"size": self.config.size, **realistic}

    def plant_key(self, plant: Any) -> dict[str, Any]:
        """As the base class, without ``scores`` when none are planted (so plants written
        before planted scores existed keep their cache keys)."""
        key = super().plant_key(plant)
        if key.get("scores", 0) is None:
            del key["scores"]
        return key

    def question(self, request: Request) -> ImageQuestion | OpenSetImageQuestion:
        """The request's typed question (open-set when ``meta`` lists biases)."""
        kind = OpenSetImageQuestion if "biases" in request.meta else ImageQuestion
        return kind.from_meta(request.meta)

    def respond(self, request: Request) -> Completion:
        return self.draw(request)

    def draw(self, request: Request) -> Completion:
        question = self.question(request)
        if isinstance(question, OpenSetImageQuestion):
            return self.draw_open_set(
                request, question, self.planted(question, request.meta, self.config.open_set)
            )
        policy = self.planted(question, request.meta, self.config.policy)
        rng = np.random.default_rng(request.seed)
        roll = rng.random()
        if roll < policy.refusal_rate:
            return Completion(status="refused", text=REFUSAL, finish_reason="content_filter")
        if roll < policy.refusal_rate + policy.no_person_rate:
            truth: dict[str, str] = {}
        else:
            truth = draw_attributes(policy, rng)
        if self.config.measured:
            png = encode_png(compose(truth, self.config.size, request.seed))
        else:
            png = encode_png(render(truth, self.config.size, int(rng.integers(1 << 30))))
        if policy.scores is not None:
            truth = {**truth, **draw_scores(policy.scores, request.seed)}
        return Completion(status="ok", finish_reason="stop", png=png, true_attributes=truth)

    def draw_open_set(
        self, request: Request, question: OpenSetImageQuestion, policy: SimulatedOpenSetPolicy
    ) -> Completion:
        """One image for an open-set caption: the classes of the biases asked about it
        (stratified sampling: image ``sample_index`` of ``n_images``)."""
        rng = np.random.default_rng(request.seed)
        if rng.random() < policy.refusal_rate:
            return Completion(status="refused", text=REFUSAL, finish_reason="content_filter")
        truth = {}
        for bias in question.biases:
            classes = bias.classes
            p = planted_distribution(policy, bias, question.caption_id)
            if policy.sampling == "stratified":
                u = (request.sample_index + 0.5) / question.n_images
            else:
                u = float(
                    np.random.default_rng(
                        [request.seed, zlib.crc32(bias.bias_id.encode())]
                    ).random()
                )
            cumulative = np.cumsum([p[c] for c in classes])
            truth[bias.bias_id] = classes[
                min(int(np.searchsorted(cumulative, u, side="right")), len(classes) - 1)
            ]
        png = encode_png(render({}, self.config.size, int(rng.integers(1 << 30))))
        return Completion(status="ok", finish_reason="stop", png=png, true_attributes=truth)


def plant_for(policy: SimulatedOpenSetPolicy, bias: AskedBias) -> SimulatedOpenSetBias:
    """The plant of a bias: the first of its id, name and label listed in the policy."""
    for value in (bias.bias_id, bias.name, bias.label):
        if value.strip().lower() in policy.biases:
            return policy.biases[value.strip().lower()]
    return policy.default


def planted_distribution(
    policy: SimulatedOpenSetPolicy, bias: AskedBias, caption_id: str
) -> dict[str, float]:
    """The known class distribution of ``bias`` on one caption's images (see
    :class:`~genfair.models.config.SimulatedOpenSetBias`)."""
    plant = plant_for(policy, bias)
    classes = bias.classes
    k = len(classes)
    if plant.pattern == "everywhere":
        w = np.array(
            [plant.weights.get(c.strip().lower(), plant.other_weight) for c in classes], dtype=float
        )
        w = w if w.sum() > 0 else np.ones(k)
        return dict(zip(classes, (w / w.sum()).tolist(), strict=True))
    if plant.pattern == "within_caption" and k > 1:
        own = derive_seed("open_set", bias.bias_id, caption_id) % k
        rest = (1.0 - plant.share) / (k - 1)
        return {c: (plant.share if i == own else rest) for i, c in enumerate(classes)}
    return {c: 1.0 / k for c in classes}


def draw_attributes(policy: SimulatedT2IPolicy, rng: np.random.Generator) -> dict[str, str]:
    """One value per attribute, in sorted attribute order (a fixed order of draws)."""
    truth = {}
    for name in sorted(policy.attributes):
        values = list(policy.attributes[name])
        p = np.array([policy.attributes[name][v] for v in values], dtype=float)
        truth[name] = values[int(rng.choice(len(values), p=p / p.sum()))]
    return truth


def draw_scores(scores: SimulatedScores, seed: int) -> dict[str, str]:
    """Planted per-image scores (``repr`` of floats), from a generator of their own so the
    image and its attributes are the same with or without them."""
    rng = np.random.default_rng([seed, 0x5C0E])
    return {
        k: repr(float(m + scores.sd * rng.standard_normal()))
        for k, m in sorted(scores.mean.items())
    }


def skin_swatch(value: str | None) -> tuple[int, int, int]:
    if value is None:
        return _NEUTRAL_FACE
    key = value.lower().replace(" ", "_").replace("-", "_")
    return MONK_SWATCHES.get(key) or SKIN_GROUP_SWATCHES.get(key) or _NEUTRAL_FACE


def render(truth: dict[str, str], size: int, variant: int) -> Any:
    """The synthetic picture: stripes, a face oval (unless nobody is drawn), a banner."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), (70, 90, 120))
    draw = ImageDraw.Draw(image)
    step = max(4, size // 8)
    offset = variant % step  # images of the same draw differ, visibly synthetic either way
    for x in range(-size, size, step):
        draw.line(
            [(x + offset, 0), (x + offset + size, size)],
            fill=(90, 110, 140),
            width=max(1, step // 3),
        )
    if truth:
        box = (size * 0.3, size * 0.15, size * 0.7, size * 0.7)
        draw.ellipse(box, fill=skin_swatch(truth.get("skin_tone")), outline=(0, 0, 0))
    banner = size - max(3, size // 5)
    draw.rectangle((0, banner, size, size), fill=(255, 220, 0))
    if size >= 48:  # the default bitmap font is 10 px tall
        draw.text((2, banner), "SIMULATED", fill=(0, 0, 0))
    return image


def choose_photo(truth: dict[str, str], seed: int) -> PersonPhoto | None:
    """The shipped photo a realistic image of ``truth`` shows (None: nobody drawn, a photo
    of :data:`~genfair.models.photos.NO_PERSON` instead). Candidates are the photos none of
    whose documented labels contradicts the draw; among them, those documenting the most
    drawn values; one of those uniformly, from a generator of its own (seeded by ``seed``)."""
    if not truth:
        return None
    drawn = {k: str(v).lower() for k, v in truth.items()}
    fits = [p for p in people() if all(drawn.get(k, v) == v for k, v in p.labels.items())]
    best = max(len(p.labels.keys() & drawn.keys()) for p in fits)
    fits = [p for p in fits if len(p.labels.keys() & drawn.keys()) == best]
    return fits[int(np.random.default_rng([seed, 0x9407]).integers(len(fits)))]


def compose(truth: dict[str, str], size: int, seed: int) -> Any:
    """A realistic picture of ``truth`` (module docstring): the photo of :func:`choose_photo`
    resized (Pillow's 8-bit bicubic: polynomial weights applied in fixed point, with no libm
    call, whose x86-64 variants glibc picks by CPU: the same bytes on every CPU) to 45-85% of
    the side (an LFW face crop: 22-38%), at a random place above the banner, on a vertical
    two-colour gradient; then integer noise of +-2 on every pixel, so a 1024-px PNG is about
    1.3 MB (1.25 MiB), as a real one is. Every random choice comes from ``seed``: the same
    request gives the same bytes, another seed another file."""
    from PIL import Image

    rng = np.random.default_rng([seed, 0x9C05])
    photo = choose_photo(truth, seed)
    if photo is None:
        name = NO_PERSON[int(rng.integers(len(NO_PERSON)))]
        pixels, share = load_photo(name), (45, 85)
    else:
        pixels = load_photo(photo.photo_id)
        share = (22, 38) if not photo.labels else (45, 85)  # % of the side
    banner = max(3, size // 40)
    top, bottom = rng.integers(0, 256, (2, 3))
    ramp = np.arange(size)[:, None] * (bottom - top)[None, :] // max(1, size - 1) + top
    canvas = np.broadcast_to(ramp[:, None, :], (size, size, 3)).astype(np.int16)
    height = int(rng.integers(size * share[0] // 100, size * share[1] // 100 + 1))
    width = max(1, min(size, round(height * pixels.shape[1] / pixels.shape[0])))
    height = min(height, size - banner)
    resized = np.asarray(
        Image.fromarray(pixels).resize((width, height), Image.Resampling.BICUBIC), np.int16
    )
    y = int(rng.integers(0, size - banner - height + 1))
    x = int(rng.integers(0, size - width + 1))
    canvas = canvas.copy()
    canvas[y : y + height, x : x + width] = resized
    canvas += rng.integers(-2, 3, canvas.shape, dtype=np.int16)
    image = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))
    _banner(image, banner)
    return image


def _banner(image: Any, height: int) -> None:
    """The ``SIMULATED`` strip along the bottom edge: the 10-px bitmap font drawn once and
    scaled up with nearest-neighbour (integer) sampling."""
    from PIL import Image, ImageDraw

    size = image.width
    strip = Image.new("RGB", (max(1, size * 12 // height), 12), (255, 220, 0))
    ImageDraw.Draw(strip).text((2, 0), "SIMULATED", fill=(0, 0, 0))
    image.paste(strip.resize((size, height), Image.Resampling.NEAREST), (0, size - height))
