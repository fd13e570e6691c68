"""The curation steps' configurations (``conf/curation/*.yaml``), apart from the code that
runs them: validating params and fingerprinting the files they name (the always-running
``curation_inputs`` stage) needs these classes, not pandas, PIL or the sentence splitter.
:mod:`.news`, :mod:`.facet` and :mod:`.occupations` re-export them.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from genfair.limits import MAX_ATTEMPTS, MAX_CHARS, MAX_RECORDS, MAX_SIDE, MAX_SMALL
from genfair.strict import Strict
from genfair.urls import checked_url

__all__ = ["DEFAULT_DROP_ALIASES", "DEFAULT_NON_OCCUPATIONAL", "DEFAULT_NO_HYPONYMS",
           "DEFAULT_SENSES", "EMBEDDED_SOURCE", "FACET_CLASSES", "DetectorConfig",
           "EmbeddedSource", "FacetConfig", "FileSource", "NewsCollectionConfig", "NewsSource",
           "OccupationsConfig",
           "WebSource"]  # fmt: skip


# ---- news (collect_news)

#: the ``source`` of every article of the embedded corpus (gensim's ABC news sample)
EMBEDDED_SOURCE = "abc-lee-background (gensim)"

_FILE_SUFFIXES = {".jsonl", ".ndjson", ".csv", ".parquet"}


class WebSource(Strict):
    """A news site's RSS/Atom feed or XML sitemap (sitemap indexes are followed)."""

    kind: Literal["feed", "sitemap"]
    url: str
    #: overrides the section found in the listing or the page, e.g. for a per-section feed
    section: str | None = None
    #: at most this many articles of this source are used (after robots and date checks)
    max_articles: int | None = Field(default=None, gt=0, le=MAX_RECORDS)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return checked_url(value)


class FileSource(Strict):
    """A JSONL/CSV/parquet file with ``headline`` and ``body`` columns (``source``,
    ``published`` or ``date``, ``section``, ``url`` optional). Errors name the 1-based
    record (data row; CSV header and blank JSONL lines not counted)."""

    kind: Literal["file"]
    path: Path

    @field_validator("path")
    @classmethod
    def _known_suffix(cls, value: Path) -> Path:
        if value.suffix.lower() not in _FILE_SUFFIXES:
            raise ValueError(f"{value}: use one of {sorted(_FILE_SUFFIXES)}")
        return value


class EmbeddedSource(Strict):
    """A corpus shipped with an installed package; works offline."""

    kind: Literal["embedded"]
    name: Literal["lee_background"] = "lee_background"


NewsSource = Annotated[WebSource | FileSource | EmbeddedSource, Field(discriminator="kind")]


class NewsCollectionConfig(Strict):
    """What to collect and how politely; dates are inclusive publication-date bounds."""

    sources: list[NewsSource] = Field(min_length=1)
    date_from: date | None = None
    date_to: date | None = None
    #: keep only these sections (case-insensitive); None keeps all
    sections: list[str] | None = None
    rate_limit_per_host_s: float = Field(default=1.0, ge=0)
    user_agent: str = "genfair-news-collector/0.1 (+research)"
    timeout_s: float = Field(default=20, gt=0)
    #: web pages whose extracted body is shorter are skipped (navigation, paywall stubs)
    min_body_chars: int = Field(default=200, ge=0, le=MAX_CHARS)
    #: retries of a request answered 429/5xx or failing at the network level
    max_retries: int = Field(default=3, ge=0, le=MAX_ATTEMPTS)
    #: first backoff between retries; it doubles each time
    retry_backoff_s: float = Field(default=1.0, ge=0)
    #: every web response (listing, page, robots.txt) is cut at this many MiB once decoded,
    #: so a gzip bomb costs at most this much memory; the sitemap protocol allows 50 MiB
    max_download_mb: float = Field(default=50, gt=0, le=1024)
    #: cap on the final table, taken in its deterministic order
    max_articles: int | None = Field(default=None, gt=0, le=MAX_RECORDS)
    #: longer bodies / headlines are rejected (a whole file or page glued into one record)
    max_body_chars: int = Field(default=200_000, gt=0, le=MAX_CHARS)
    max_headline_chars: int = Field(default=1_000, gt=0, le=MAX_CHARS)
    #: a bad record of a file source: ``report`` skips it (listed in the report's
    #: ``rejected``), ``fail`` stops with an error naming the file and line
    bad_rows: Literal["report", "fail"] = "report"

    @model_validator(mode="after")
    def _window_order(self) -> NewsCollectionConfig:
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise ValueError(f"date_from {self.date_from} is after date_to {self.date_to}")
        return self


# ---- FACET (curate_facet)

#: FACET's 52 person classes (``class1`` values), as in the release and paper 002's Table 20.
FACET_CLASSES: tuple[str, ...] = (
    "astronaut", "backpacker", "ballplayer", "bartender", "basketball_player", "boatman",
    "carpenter", "cheerleader", "climber", "computer_user", "craftsman", "dancer",
    "disk_jockey", "doctor", "drummer", "electrician", "farmer", "fireman", "flutist",
    "gardener", "guard", "guitarist", "gymnast", "hairdresser", "horseman", "judge",
    "laborer", "lawman", "lifeguard", "machinist", "motorcyclist", "nurse", "painter",
    "patient", "prayer", "referee", "repairman", "reporter", "retailer", "runner",
    "sculptor", "seller", "singer", "skateboarder", "soccer_player", "soldier", "speaker",
    "student", "teacher", "tennis_player", "trumpeter", "waiter",
)  # fmt: skip


class DetectorConfig(Strict):
    """OpenCV's HOG + linear SVM pedestrian detector (Dalal & Triggs), for unannotated images.

    HOG looks for upright people about 64x128 px, so the image is searched at a few working
    sizes (longer side), with a border so people cut by the frame still fit the window;
    overlapping hits are merged by non-max suppression."""

    enabled: bool = False
    #: 128 suits photos of one or a few people filling the frame (FACET's usual); add 256
    #: or 512 to find smaller people, at the cost of more false alarms
    work_sides: tuple[Annotated[int, Field(le=MAX_SIDE)], ...] = Field(
        default=(128,), min_length=1, max_length=MAX_SMALL
    )
    #: border added on each side, as a fraction of the resized image's longer side
    border_frac: float = Field(default=0.5, ge=0, le=2)
    #: SVM margin a hit needs (OpenCV's weights; 0 is the decision boundary)
    min_score: float = 0.7
    nms_iou: float = Field(default=0.3, gt=0, le=1)
    max_persons: int = Field(default=10, gt=0, le=MAX_SMALL)

    @field_validator("work_sides")
    @classmethod
    def _big_enough(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(side < 128 for side in value):
            raise ValueError("every work side must be >= 128 (the HOG window is 64x128)")
        return value


class FacetConfig(Strict):
    """Where the FACET release is and how to turn its annotations into person crops."""

    release_dir: Path
    #: relative to ``release_dir`` (or absolute)
    annotations_file: Path = Path("annotations.csv")
    images_dir: Path = Path("images")
    crop_size: int = Field(default=384, ge=16, le=MAX_SIDE)
    #: crop side = max(box w, box h) * margin (the context around the person)
    margin: float = Field(default=1.2, ge=1.0)
    #: ``box``: the square around the box, resized to crop_size; ``fixed``: a crop_size
    #: window at the image's own resolution (the literal reading of paper 002)
    crop_side: Literal["box", "fixed"] = "box"
    #: how the crop is filled where it leaves the image
    pad_mode: Literal["constant", "edge"] = "constant"
    pad_value: int = Field(default=0, ge=0, le=255)
    single_person_only: bool = False
    #: keep only these FACET classes; None keeps all
    classes: list[str] | None = None
    #: boxes whose width or height is smaller are dropped
    min_box_px: int = Field(default=0, ge=0, le=MAX_SIDE)
    skin_groups: Literal["iris", "lvlm_facet"] = "lvlm_facet"
    monk_rule: Literal["median", "majority"] = "median"
    detector: DetectorConfig = DetectorConfig()
    #: an image with more pixels (as its header declares) is not decoded: its rows are bad
    #: rows. Bounds memory per image (3 bytes a pixel); PIL itself refuses images above
    #: 2 * PIL.Image.MAX_IMAGE_PIXELS (about 179 million pixels) whatever this says.
    max_image_pixels: int = Field(default=40_000_000, gt=0, le=MAX_SIDE * MAX_SIDE)
    #: a box whose square (side max(w, h)) covers more than this multiple of the image's area
    #: is a bad row (a person's box lies in the image: about 1 at most)
    max_box_area_ratio: float = Field(default=2.0, gt=0)

    @field_validator("classes")
    @classmethod
    def _known_classes(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            unknown = sorted(set(value) - set(FACET_CLASSES))
            if unknown:
                raise ValueError(f"unknown FACET class(es) {unknown}; use names from FACET_CLASSES")
        return value

    def annotations_path(self) -> Path:
        return self.release_dir / self.annotations_file

    def images_path(self) -> Path:
        return self.release_dir / self.images_dir


# ---- occupations (map_occupations)

# §C.5 names student, patient and backpacker; the others meet the same test (an activity or
# circumstance, not a job) and have no row in the authors' tables either.
DEFAULT_NON_OCCUPATIONAL: dict[str, str] = {
    "backpacker": "leisure activity (named in paper 002 §C.5)",
    "patient": "receiving care, not employment (named in paper 002 §C.5)",
    "student": "enrolment, not employment (named in paper 002 §C.5)",
    "prayer": "religious activity (a person praying), not a job; §C.5's test",
    "computer_user": "activity shared by most occupations; §C.5's test",
    "motorcyclist": "mode of travel, not a job; §C.5's test",
    "skateboarder": "leisure/sport activity, not a job; §C.5's test",
    "climber": "leisure/sport activity, not a job; §C.5's test",
    "runner": "leisure/sport activity, not a job; §C.5's test",
}

# Curated WordNet 3.0 senses where the first noun.person sense is not FACET's class, or where
# two senses are both meant. Occupations not listed take their first noun.person sense.
DEFAULT_SENSES: dict[str, tuple[str, ...]] = {
    "cheerleader": ("cheerleader.n.02",),
    "climber": ("climber.n.04",),
    "craftsman": ("craftsman.n.03",),
    "dancer": ("dancer.n.01",),
    "doctor": ("doctor.n.01",),
    "fireman": ("fireman.n.04",),
    "gardener": ("gardener.n.01", "gardener.n.02"),
    "horseman": ("horseman.n.01",),
    "judge": ("judge.n.01",),
    "nurse": ("nurse.n.01",),
    "painter": ("painter.n.01", "painter.n.02"),
    "referee": ("referee.n.01",),
    "runner": ("runner.n.02", "runner.n.06"),
    "singer": ("singer.n.01",),
    "speaker": ("speaker.n.01",),
    "student": ("student.n.01",),
    "trumpeter": ("trumpeter.n.01",),
    "waiter": ("waiter.n.01",),
}

DEFAULT_NO_HYPONYMS: tuple[str, ...] = ("patient", "speaker", "student")

# WordNet lemmas that would send a common answer to the wrong class
DEFAULT_DROP_ALIASES: tuple[str, ...] = (
    "jack",  # laborer.n.01: a name / a card / a tool
    "packer",  # backpacker.n.01: usually a packing worker
    "trafficker",  # seller.n.01: an illegal trade
    "fire-eater",  # fireman.n.04: also a circus performer
    "linesman",  # electrician.n.01: also a sports official
)


class OccupationsConfig(Strict):
    """``conf/curation/occupations.yaml``."""

    occupations: Path = Path("data/reference/facet_occupations.csv")
    us_statistics: Path = Path("data/reference/iris_real_world_us.csv")
    eu_statistics: Path = Path("data/reference/iris_real_world_eu.csv")
    #: occupation -> why it is not an occupation (§C.5): excluded from real-world comparisons
    non_occupational: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_NON_OCCUPATIONAL))
    #: which age boundaries the statistics are recorded under (see module docstring)
    age_buckets: Literal["paper", "release"] = "paper"
    #: occupation -> WordNet synset names (noun.person, with the occupation as a lemma)
    senses: dict[str, tuple[str, ...]] = Field(default_factory=lambda: dict(DEFAULT_SENSES))
    #: occupations whose direct hyponyms are not used as aliases
    no_hyponyms: tuple[str, ...] = DEFAULT_NO_HYPONYMS
    #: occupation -> curated aliases, ranked as synonyms
    extra_aliases: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    #: aliases never used (matched after normalisation)
    drop_aliases: tuple[str, ...] = DEFAULT_DROP_ALIASES

    @model_validator(mode="after")
    def _senses_nonempty(self) -> OccupationsConfig:
        for occupation, names in self.senses.items():
            if not names:
                raise ValueError(f"senses.{occupation}: give at least one synset or remove the key")
        return self
