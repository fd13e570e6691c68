"""Validated model configuration: one pydantic model per backend.

A model under test is configuration, not code: a file under ``conf/model/`` that Hydra
composes into ``params.yaml`` under ``models.<name>``. These classes validate that block
and fail fast with the offending key named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)

from genfair.limits import (
    MAX_ATTEMPTS,
    MAX_ITERATIONS,
    MAX_PARALLEL,
    MAX_RECORDS,
    MAX_SIDE,
    MAX_SMALL,
    MAX_TOKENS,
)
from genfair.models.rate_limit import parse_rate
from genfair.models.redaction import key_env_problem, key_env_refusal
from genfair.strict import Strict
from genfair.urls import checked_url

#: a model's architecture family for IRIS's impartiality test (paper 002 §4.1, Fig. 4(d): Welch's
#: t-test between Table 4's groups), e.g. "autoregressive+diffusion" (hybrid UMLLMs),
#: "autoregressive", "diffusion", "mllm"; free text, trimmed, optional
Architecture = Annotated[str | None, Field(min_length=1, pattern=r"^\S(.*\S)?$")]


#: the largest ``max_response_mb`` (1 TiB): its byte count must stay a number a limit compares
MAX_RESPONSE_MB = 1 << 20


#: a probability or a rate: a float in [0, 1]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


def _in_unit_interval(values: dict[str, float], what: str) -> dict[str, float]:
    """``values`` unchanged if every value lies in [0, 1]; else ``ValueError`` naming them."""
    bad = {k: p for k, p in values.items() if not 0.0 <= p <= 1.0}
    if bad:
        raise ValueError(f"{what} must lie in [0, 1], got {bad}")
    return values


#: sampling temperature (0: greedy) and nucleus mass: one definition of their valid ranges
#: for a model's sampling, a request's override and a methodology's setting
Temperature = Annotated[float, Field(ge=0.0)]
TopP = Annotated[float, Field(gt=0.0, le=1.0)]


class SamplingParams(Strict):
    """Decoding settings; part of every cache key. ``temperature = 0`` means greedy."""

    temperature: Temperature = 0.0
    top_p: TopP = 1.0
    max_tokens: int = Field(64, gt=0, le=MAX_TOKENS)


class DecodingOverride(Strict):
    """Decoding that replaces the model's own ``sampling`` for some requests (a
    methodology's setting, :class:`genfair.models.base.Request`); ``None`` keeps the
    model's value."""

    temperature: Temperature | None = None
    top_p: TopP | None = None


#: model config keys that say where or how fast a model runs, or what it costs, not what it
#: answers: outside the hashes and records that decide whether a stage reruns
PLACEMENT_KEYS = frozenset({"worker_resources", "rate_limit", "price", "replica", "tokenizer"})


class Price(Strict):
    """What a model's calls cost (``genfair plan``'s estimate and ``generation.max_cost``), in
    one currency of the user's choosing; an absent rate is 0. ``price: {}`` declares a model
    free (a local one); a model without ``price`` is not priced."""

    input_per_million: float = Field(0.0, ge=0.0)
    output_per_million: float = Field(0.0, ge=0.0)
    per_image: float = Field(0.0, ge=0.0)


class _UnderTest(Strict):
    """What every model under test has, whatever its modality."""

    #: free-text description shown in `genfair models` and the MLflow run
    description: str = ""
    #: model family (IRIS Fig. 4(d)); None = unknown
    architecture: Architecture = None
    #: Dask worker resources one task of this model needs (``{GPU: 1}``): with
    #: ``generation.executor: dask`` its calls run only on workers that declare them
    #: (``dask worker --resources GPU=1``); ignored by the local executor
    worker_resources: dict[str, float] = {}
    #: what its calls cost (None: not priced); changes no answer, no hash, no cache key
    price: Price | None = None
    #: at most this many attempts per call for this model (a cap on each methodology's own
    #: ``max_attempts``, the paper's value: FACT-OR-FAIR asks an invalid objective answer up
    #: to 5 times); ``None``: the methodology's value. ``1``: never re-ask (a paid endpoint)
    max_attempts: int | None = Field(None, ge=1, le=MAX_ATTEMPTS)

    #: keys left out of the config's dump (its content hash, MLflow params) at these values:
    #: a config that does not set a key keeps the hash it had before the key existed
    quiet_defaults: ClassVar[dict[str, Any]] = {"max_attempts": None}

    @model_serializer(mode="wrap")
    def _without_quiet_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        quiet = self.quiet_defaults
        return {k: v for k, v in data.items() if not (k in quiet and v == quiet[k])}

    @field_validator("worker_resources")
    @classmethod
    def _resources(cls, value: dict[str, float]) -> dict[str, float]:
        bad = {k: v for k, v in value.items() if v <= 0 or not k.replace("_", "").isalnum()}
        if bad:
            raise ValueError(
                f"each resource needs a name (letters, digits, _) and an amount > 0, got {bad}"
            )
        return value


class _ModelBase(_UnderTest):
    modality: Literal["llm"] = "llm"
    sampling: SamplingParams = SamplingParams()


class _Local(Strict):
    """A model run in this process (torch)."""

    device: str = "cpu"
    #: torch / BLAS threads for generation; None = every core this process may run on
    #: (``os.sched_getaffinity``). See :mod:`genfair.models.local`.
    threads: int | None = Field(None, gt=0, le=MAX_PARALLEL)


class _Transformers(_Local):
    """A transformers checkpoint (llm or vlm): a hub id or a local directory."""

    backend: Literal["hf"]
    model_id: str
    revision: str = "main"
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "float32"
    trust_remote_code: bool = False
    #: prepended as a system message when set
    system_prompt: str | None = None


class HFModelConfig(_ModelBase, _Transformers):
    """Any transformers causal LM: a hub id or a local directory."""

    batch_size: int = Field(8, gt=0, le=MAX_PARALLEL)


class EmbeddedModelConfig(_ModelBase, _Local):
    """A model shipped inside a PyPI package as a GGUF file (the offline default)."""

    backend: Literal["embedded"]
    model_id: str
    package: str
    gguf_file: str
    #: pinned distribution version; part of the cache key
    revision: str
    batch_size: int = Field(16, gt=0, le=MAX_PARALLEL)
    system_prompt: str | None = None
    #: compute dtype; ``auto``: bfloat16 on a CPU with native bf16 (AMX / AVX512-BF16), else
    #: float32 (:func:`genfair.models.cpu.resolve_dtype`); in the cache key unless float32
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    #: what generates: ``transformers``, or ``ctranslate2`` (greedy unconstrained requests;
    #: :mod:`genfair.models.ct2`); ``auto``: :func:`genfair.models.cpu.resolve_engine`;
    #: in the cache key unless transformers
    engine: Literal["auto", "transformers", "ctranslate2"] = "auto"

    #: ``dtype`` and ``engine`` at ``auto`` are left out of the dump as well
    quiet_defaults: ClassVar[dict[str, Any]] = {
        **_UnderTest.quiet_defaults,
        "dtype": "auto",
        "engine": "auto",
    }


class _OpenAIEndpoint(Strict):
    """How any OpenAI-compatible endpoint is reached (chat, images, vision): one set of
    transport settings for every modality."""

    # a value pasted into the wrong field may be a key: never echo inputs in errors
    model_config = ConfigDict(hide_input_in_errors=True)

    backend: Literal["openai"]
    model_id: str
    base_url: str = "https://api.openai.com/v1"
    #: name of the environment variable holding the key; never the key itself
    api_key_env: str | None = "OPENAI_API_KEY"
    revision: str = ""
    concurrency: int = Field(8, gt=0, le=MAX_PARALLEL)
    #: requests per second or per minute at most (``"500/minute"``, ``"10/second"``): no more
    #: than N HTTP requests (retries included) start in any such window, across the whole Dask
    #: cluster with ``generation.executor: dask``; ``None``: no limit. Changes no answer: outside
    #: the cache key and the run hashes
    rate_limit: str | None = None
    #: total deadline of one HTTP request in seconds (connect, send, wait and the whole
    #: answer), not a per-read limit; each retry gets a new deadline
    timeout_s: float = Field(60.0, gt=0)
    #: a response body larger than this (MiB, after decompression) is cut off and the call
    #: recorded as an ``error``: a runaway completion must not exhaust memory
    max_response_mb: float = Field(8.0, gt=0, le=MAX_RESPONSE_MB)
    max_retries: int = Field(6, ge=0, le=MAX_ATTEMPTS)
    backoff_initial_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(60.0, ge=0)
    #: sent as the request's ``seed`` field when the endpoint supports it
    send_seed: bool = True
    #: extra JSON fields merged into every request body (e.g. vLLM's ``top_k``)
    extra_body: dict[str, Any] = {}

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return checked_url(value, base=True)

    @field_validator("rate_limit")
    @classmethod
    def _rate(cls, value: str | None) -> str | None:
        if value is not None:
            parse_rate(value)
        return value

    @field_validator("api_key_env")
    @classmethod
    def _variable_name(cls, value: str | None) -> str | None:
        problem = None if value is None else key_env_problem(value)
        if problem:
            # the value is left out on purpose: it may be the key itself
            raise ValueError(
                "this must be the NAME of the environment variable that holds "
                f"the key, but {problem} (value not shown). Put the key in a "
                "variable (export OPENAI_API_KEY=...) and set api_key_env: "
                "OPENAI_API_KEY; if the key was saved in a file, rotate it."
            )
        refusal = None if value is None else key_env_refusal(value)
        if refusal:
            raise ValueError(refusal)
        return value


class _Declared(Strict):
    """What an endpoint's owner declares about its decoding (genfair cannot see it)."""

    #: ``True``: the endpoint decodes greedily and repeatably at temperature 0 (vLLM,
    #: ``transformers serve``, llama.cpp), so an invalid answer at temperature 0 is not asked
    #: again: the re-ask would return the same text and cost a call. ``False`` (the default):
    #: temperature 0 is not taken to repeat itself (OpenAI's API says "mostly deterministic")
    deterministic: bool = False

    quiet_defaults: ClassVar[dict[str, Any]] = {"deterministic": False}


class OpenAIModelConfig(_ModelBase, _OpenAIEndpoint, _Declared):
    """Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, TGI, Ollama...)."""

    system_prompt: str | None = None
    #: what counts its tokens for ``genfair plan`` (:mod:`genfair.models.endpoint_tokens`):
    #: a local tokenizer folder (or a hub id already in the local Hugging Face cache), or
    #: ``endpoint`` for the server's ``/tokenize`` route (vLLM); ``None``: the ``model_id``'s
    #: folder when it is a local one, else 4 characters a token (labelled an estimate).
    #: Changes no answer: outside the cache key and the run hashes
    tokenizer: str | None = Field(None, min_length=1, max_length=1000)
    quiet_defaults: ClassVar[dict[str, Any]] = {
        **_UnderTest.quiet_defaults,
        **_Declared.quiet_defaults,
        "tokenizer": None,
    }


class ReplicaService(Strict):
    """SIMULATOR setting: a simulator answering like itself, but as one model replica on one
    GPU would be paced: each batch of up to ``batch_size`` requests costs ``service_time_s``
    of waiting (a sleep, no CPU), and a process serves one batch at a time (one GPU per
    process, as one replica per Dask worker). Where and how fast, not what: outside the cache
    keys and the run hashes (:data:`PLACEMENT_KEYS`). For scale-out measurements
    (docs/scale-out.md); the answers are the simulator's."""

    service_time_s: float = Field(gt=0, le=60)
    batch_size: int = Field(8, gt=0, le=4096)


class _Simulator(Strict):
    #: SIMULATOR pacing (:class:`ReplicaService`); ``None``: answers at once
    replica: ReplicaService | None = None
    #: this simulator's own plants: methodology -> plant field -> its value (as in the
    #: methodology's config, e.g. ``{pronoun_quiz: {simulated: {kind: categorical, ...}}}``),
    #: each replacing the methodology's field whole for this model's runs only
    #: (:func:`genfair.study_params.run_config`).
    #: Not part of the model's identity (never dumped: its hashes, cache keys and MLflow keys
    #: stay): each run's ``runs`` entry digests the plants it answers with
    plants: dict[str, dict[str, Any]] = Field(default_factory=dict, exclude=True)
    #: the model's key in the study (set by :class:`genfair.study_params.StudyParams`): its calls'
    #: seeds derive from it (:meth:`genfair.models.base.Simulator.call_seed`), so two simulators
    #: of one config and plant are independent draws; ``None`` outside a study
    _study_key: str | None = PrivateAttr(None)


class SimulatedPolicy(Strict):
    """What the planted-bias simulator does with a multiple-choice probe.

    With probability ``accuracy`` it picks the option holding the real-world group of
    the statistic, otherwise one of the other options uniformly. ``refusal_rate`` and
    ``invalid_rate`` exercise the failure paths of the pipeline. ``kind`` defaults to
    ``choice`` so that policies written before the rewrite policy existed stay valid.
    """

    kind: Literal["choice"] = "choice"
    accuracy: Probability
    refusal_rate: Probability = 0.0
    invalid_rate: Probability = 0.0
    #: FACT-OR-FAIR attribution / in-group probes: with this probability it picks an
    #: individual of the primed ``prime_attribute`` group (``meta["primed_letters"]``)
    #: before the accuracy rule; probes without a prime are unaffected
    prime_following: Probability = 0.0
    prime_attribute: Literal["race", "gender"] = "race"


class SimulatedRewritePolicy(Strict):
    """What the planted-bias simulator does with a news probe (paper 001): it returns the
    original article with each female gender word turned into its male counterpart with
    probability ``female_to_male``, independently per occurrence, or refuses with
    probability ``refusal_rate``. The planted word-level bias is therefore known: an
    article with ``f`` female and ``m`` male words has expected female share
    ``f (1 - p) / (f + m)`` after the rewrite. Race words (paper 001's "descriptor +
    occupation", e.g. "Black teachers") with the descriptor ``black`` become ``white``
    with probability ``black_to_white``, likewise per occurrence.
    """

    kind: Literal["rewrite"]
    female_to_male: Probability
    black_to_white: Probability = 0.0
    refusal_rate: Probability = 0.0


#: how far a planted distribution's probabilities may sum from 1 (what a YAML file's decimals lose)
_SUM_TOLERANCE = 1e-6
#: a planted distribution: option -> probability
Distribution = Annotated[dict[str, Probability], Field(max_length=MAX_SMALL)]


class SimulatedCategoricalPolicy(Strict):
    """SIMULATOR: a categorical plant for a multiple-choice probe, for any methodology: the
    simulated LLM answers option ``o`` of the question with probability ``distribution[o]``,
    or ``by_group[g][o]`` when the question's ``group`` is a listed ``g`` (a group not listed
    uses ``distribution``; an error when that is empty). An option of the question left out of
    the distribution is never answered; a named option the question does not offer is an
    error where the call is made. Before drawing it refuses with ``refusal_rate`` and rambles
    with ``invalid_rate``, as the choice policy does. ``answer`` is the answer's shape:
    ``json`` writes ``{"answer": "<option>"}``, ``text`` the option alone.

    E.g. a pronoun completion: ``{kind: categorical, distribution: {he: 0.6, she: 0.3,
    they: 0.1}, by_group: {nurse: {he: 0.1, she: 0.8, they: 0.1}}}``."""

    kind: Literal["categorical"]
    distribution: Distribution = {}
    by_group: dict[str, Annotated[Distribution, Field(min_length=1)]] = Field(
        {}, max_length=MAX_RECORDS
    )
    refusal_rate: Probability = 0.0
    invalid_rate: Probability = 0.0
    answer: Literal["json", "text"] = "json"

    @model_validator(mode="after")
    def _distributions(self) -> SimulatedCategoricalPolicy:
        if not self.distribution and not self.by_group:
            raise ValueError("a categorical plant needs a `distribution` or `by_group`")
        if self.refusal_rate + self.invalid_rate > 1:
            raise ValueError("refusal_rate + invalid_rate must be at most 1")
        named = {f"by_group.{g}": d for g, d in self.by_group.items()}
        for where, shares in ({"distribution": self.distribution} | named).items():
            total = sum(shares.values())
            if shares and abs(total - 1) > _SUM_TOLERANCE:
                raise ValueError(f"{where}: the probabilities must sum to 1, got {total:g}")
        return self

    def weights(self, options: list[str], group: str | None) -> list[float]:
        """The probability of each of ``options`` planted for ``group`` (``distribution`` for
        a group not listed); ``ValueError`` when the plant has none for ``group`` or names an
        option not offered."""
        shares = self.distribution if group is None else self.by_group.get(group, self.distribution)
        if not shares:
            raise ValueError(
                f"the categorical plant (a methodology's `simulated` config) has no "
                f"distribution for group {group!r}: add it to "
                f"`by_group` (listed: {sorted(self.by_group)[:5]}) or set `distribution`"
            )
        if not set(shares) <= set(options):
            raise ValueError(
                f"the categorical plant (a methodology's `simulated` config) names options "
                f"{sorted(set(shares) - set(options))[:5]} "
                f"that the question does not offer (options: {options[:10]})"
            )
        return [shares.get(option, 0.0) for option in options]

    def on_options(
        self, option_of: Mapping[str, str], group: str | None = None
    ) -> SimulatedCategoricalPolicy:
        """This plant, given in answer words, for one probe whose options say them otherwise
        (lettered, and shuffled per probe): ``option_of`` maps each word to the probe's option
        that says it (``{"he": "C", "she": "A", "they": "B"}``), and the result plants the
        distribution of ``group`` (as :meth:`weights` picks it) over those options. The
        question then offers the options (``letters=["A", "B", "C"]``) and the simulator
        answers one of them. ``ValueError`` naming the words the probe does not offer."""
        shares = self.distribution if group is None else self.by_group.get(group, self.distribution)
        missing = sorted(set(shares) - set(option_of))
        if missing:
            raise ValueError(
                f"the categorical plant (a methodology's `simulated` config) names answers "
                f"{missing[:5]} that the probe does not offer (its answers: {list(option_of)[:10]})"
            )
        if len({option_of[word] for word in shares}) < len(shares):
            raise ValueError(f"two answers of the plant share one option: {dict(option_of)}")
        return self.model_copy(
            update={
                "distribution": {option_of[word]: share for word, share in shares.items()},
                "by_group": {},
            }
        )


def _policy_kind(value: Any) -> str:
    """The union tag of a simulator policy: its ``kind``, ``choice`` when absent."""
    if isinstance(value, dict):
        return value.get("kind", "choice")
    return getattr(value, "kind", "choice")


SimulatorPolicy = Annotated[
    Annotated[SimulatedPolicy, Tag("choice")]
    | Annotated[SimulatedCategoricalPolicy, Tag("categorical")]
    | Annotated[SimulatedRewritePolicy, Tag("rewrite")],
    Discriminator(_policy_kind),
]
#: what answers a multiple-choice probe: the accuracy rule or a categorical plant
ChoicePolicy = Annotated[
    Annotated[SimulatedPolicy, Tag("choice")]
    | Annotated[SimulatedCategoricalPolicy, Tag("categorical")],
    Discriminator(_policy_kind),
]


class SimulatedModelConfig(_ModelBase, _Simulator):
    """A planted-bias simulator: labelled ``simulated`` in every output."""

    backend: Literal["simulated"]
    model_id: str = "planted-bias-simulator"
    revision: str = "1"
    #: named policies for calls whose question carries no ``plant`` (the built-in
    #: methodologies plant their own rates: their configs' ``simulated`` sections)
    policy: dict[str, SimulatorPolicy] = {}


LLMConfig = Annotated[
    HFModelConfig | EmbeddedModelConfig | OpenAIModelConfig | SimulatedModelConfig,
    Field(discriminator="backend"),
]


# --- text-to-image (t2i) models ----------------------------------------------------------


class _T2IBase(_UnderTest):
    modality: Literal["t2i"] = "t2i"


class DiffusersT2IConfig(_T2IBase, _Local):
    """Any diffusers pipeline (``DiffusionPipeline.from_pretrained``): hub id or local dir."""

    backend: Literal["diffusers"]
    model_id: str
    revision: str = "main"
    #: weight variant on the hub (e.g. ``fp16``); None = the default weights
    variant: str | None = None
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "float32"
    batch_size: int = Field(4, gt=0, le=MAX_PARALLEL)
    steps: int = Field(30, gt=0, le=MAX_ITERATIONS)
    guidance_scale: float = Field(7.5, ge=0.0)
    #: output size in pixels; None = the pipeline's default
    height: int | None = Field(None, gt=0, le=MAX_SIDE)
    width: int | None = Field(None, gt=0, le=MAX_SIDE)
    #: a diffusers scheduler class name (e.g. ``EulerDiscreteScheduler``); None = the
    #: pipeline's own. Swapped in with ``from_config`` so its training settings are kept.
    scheduler: str | None = None
    negative_prompt: str | None = None


class OpenAIT2IConfig(_T2IBase, _OpenAIEndpoint):
    """Any OpenAI-compatible image-generation endpoint (``POST {base_url}/images/generations``)."""

    concurrency: int = Field(4, gt=0, le=MAX_PARALLEL)
    timeout_s: float = Field(180.0, gt=0)
    size: str = Field("1024x1024", pattern=r"^(\d+x\d+|auto)$")
    quality: str | None = None
    style: str | None = None
    #: OpenAI's images API takes no seed; some compatible servers do
    send_seed: bool = False
    #: base64 images are large: a 1792x1024 PNG is about 5 MiB
    max_response_mb: float = Field(64.0, gt=0, le=MAX_RESPONSE_MB)
    #: ask for ``response_format: b64_json`` (dall-e-*); gpt-image-* always sends base64
    #: and rejects the field, so set this to false for them
    send_response_format: bool = True
    #: error codes of a 400 that mean "refused by the content policy" (recorded as
    #: ``refused`` and re-asked), not a bad request
    refusal_codes: tuple[str, ...] = ("content_policy_violation", "moderation_blocked")


#: attributes a simulated image can carry (the groups the t2i methodologies classify)
T2IAttribute = Literal["gender", "race", "age", "skin_tone"]


class SimulatedScores(Strict):
    """SIMULATOR: per-image scores an instrument's oracle STAND-IN reads (e.g. ``quality``):
    each image draws ``score ~ Normal(mean[key], sd)``, recorded in ``true_attributes``."""

    mean: dict[str, float] = Field(min_length=1)
    sd: float = Field(0.05, ge=0.0)


class SimulatedT2IPolicy(Strict):
    """The planted bias of one prompt kind: for each attribute, the probability of each
    value. Each image draws every attribute independently from these distributions (one
    person per image); with ``refusal_rate`` the call is refused instead, with
    ``no_person_rate`` the image shows nobody (``true_attributes`` is empty). ``scores``:
    planted per-image scores (None: none; the pixels and other draws never change)."""

    attributes: dict[T2IAttribute, dict[str, float]] = Field(min_length=1)
    refusal_rate: Probability = 0.0
    no_person_rate: Probability = 0.0
    scores: SimulatedScores | None = None

    @field_validator("attributes")
    @classmethod
    def _distributions(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for name, distribution in value.items():
            if not distribution:
                raise ValueError(f"{name}: give at least one value with its probability")
            _in_unit_interval(distribution, f"{name}: probabilities")
            total = sum(distribution.values())
            if abs(total - 1.0) > 1e-6:
                raise ValueError(f"{name}: probabilities sum to {total:g}, not 1")
        return value


class SimulatedOpenSetBias(Strict):
    """SIMULATOR: the planted class distribution of one open-set bias (OpenBias, paper 003),
    for any class list the bias proposer gives it.

    - ``everywhere``: every caption's images follow ``weights`` (per class, case-folded; a
      class of the bias not listed weighs ``other_weight``; all zero: uniform);
    - ``within_caption``: each caption has its own class (chosen from a hash of bias and
      caption), shown with probability ``share``, the rest spread evenly over the other
      classes: biased within a caption, balanced across captions (the paper's Fig. 9);
    - ``unbiased``: uniform over the bias's classes.
    """

    pattern: Literal["everywhere", "within_caption", "unbiased"]
    weights: dict[str, float] = {}
    other_weight: float = Field(0.0, ge=0.0)
    share: Probability = 1.0

    @field_validator("weights")
    @classmethod
    def _weights(cls, value: dict[str, float]) -> dict[str, float]:
        bad = {k: w for k, w in value.items() if w < 0}
        if bad:
            raise ValueError(f"weights must be >= 0, got {bad}")
        return {k.strip().lower(): w for k, w in value.items()}


class SimulatedOpenSetPolicy(Strict):
    """SIMULATOR: open-set biases planted per bias name (matched case-folded against the
    bias's id, name or label; ``default`` for any other bias). Each image records the class
    drawn for every bias it is asked about as ``true_attributes`` (``{bias_id: class}``).
    ``sampling``: ``stratified`` gives image ``i`` of ``N`` the class at quantile
    ``(i + 0.5) / N`` (a caption's shares are then exact when ``p * N`` is whole);
    ``random`` draws each image independently from its seed."""

    biases: dict[str, SimulatedOpenSetBias] = {}
    default: SimulatedOpenSetBias = SimulatedOpenSetBias(pattern="unbiased")
    sampling: Literal["stratified", "random"] = "random"
    refusal_rate: Probability = 0.0

    @field_validator("biases")
    @classmethod
    def _names(cls, value: dict[str, SimulatedOpenSetBias]) -> dict[str, SimulatedOpenSetBias]:
        return {k.strip().lower(): v for k, v in value.items()}


class SimulatedT2IConfig(_T2IBase, _Simulator):
    """SIMULATOR: a planted-bias text-to-image model; labelled ``simulated`` everywhere."""

    backend: Literal["simulated"]
    model_id: str = "planted-bias-t2i-simulator"
    revision: str = "1"
    #: side of the square PNG it draws, in pixels
    size: int = Field(64, ge=16, le=1024)
    #: ``synthetic``: an oval "face" on stripes, read back in oracle mode; ``realistic``: a
    #: distinct composition of a shipped, labelled photo of a person that matches the draw
    #: (:func:`genfair.models.simulated_images.compose`), measured by the real instruments
    pixels: Literal["synthetic", "realistic"] = "synthetic"
    #: named policies for prompts whose question carries no ``plant`` (``meta["policy"]``;
    #: the built-in methodologies plant their own: their configs' ``simulated`` sections)
    policy: dict[str, SimulatedT2IPolicy] = {}
    #: named open-set plants, likewise (OpenBias plants its own)
    open_set: dict[str, SimulatedOpenSetPolicy] = {}

    @property
    def measured(self) -> bool:
        """Whether the study's instruments measure its pixels (``realistic``) rather than
        read its planted attributes in oracle mode."""
        return self.pixels == "realistic"


T2IConfig = Annotated[
    DiffusersT2IConfig | OpenAIT2IConfig | SimulatedT2IConfig, Field(discriminator="backend")
]


# --- vision-language (vlm) models: image + text -> text ------------------------------------


class _VLMBase(_UnderTest):
    modality: Literal["vlm"] = "vlm"
    sampling: SamplingParams = SamplingParams()


class HFVLMConfig(_VLMBase, _Transformers):
    """Any transformers image-text-to-text model (``AutoModelForImageTextToText``) with its
    processor's chat template: a hub id or a local directory."""

    batch_size: int = Field(4, gt=0, le=MAX_PARALLEL)


class OpenAIVLMConfig(_VLMBase, _OpenAIEndpoint, _Declared):
    """Any OpenAI-compatible chat endpoint that takes images (as base64 data URLs)."""

    system_prompt: str | None = None
    quiet_defaults: ClassVar[dict[str, Any]] = OpenAIModelConfig.quiet_defaults
    #: OpenAI's ``image_url.detail``: low (512 px, cheap), high, or auto
    image_detail: Literal["auto", "low", "high"] = "auto"


class SimulatedVLMPolicy(Strict):
    """What the planted-bias VLM does with one probe kind: it answers the true option with
    the probability set for the request's demographic group, otherwise another option
    uniformly; or refuses with ``refusal_rate``. A group not listed uses
    ``default_accuracy``, and is an error when that is unset."""

    accuracy: dict[str, float] = Field(min_length=1)
    default_accuracy: Probability | None = None
    refusal_rate: Probability = 0.0

    @field_validator("accuracy")
    @classmethod
    def _accuracies(cls, value: dict[str, float]) -> dict[str, float]:
        return _in_unit_interval(value, "accuracies")


class SimulatedVLMRecallPolicy(Strict):
    """A planted recall per class, group and prompt kind (paper 004's questions about FACET
    person images; :class:`genfair.models.planted_recall.PlantedRecall`, whose docstring
    gives the formula): the probability of answering with the image's class (direct
    question) or Yes (single choice) is ``base[prompt][class]`` (``default_base`` for a class
    not listed) plus ``effects[prompt][attribute][group]`` plus
    ``class_effects[prompt][class][attribute][group]``, clipped to ``[floor, ceiling]``; a miss
    is a refusal with probability ``refusal_share``. Reads the request's ``meta`` keys
    ``class``, ``prompt``, ``gender``, ``skin_tone``, ``age``."""

    kind: Literal["planted_recall"]
    base: dict[str, dict[str, float]] = {}
    default_base: Probability = 0.6
    effects: dict[str, dict[str, dict[str, float]]] = {}
    class_effects: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    floor: Probability = 0.02
    ceiling: Probability = 0.98
    refusal_share: Probability = 0.1

    @field_validator("base")
    @classmethod
    def _bases(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for prompt, by_class in value.items():
            _in_unit_interval(by_class, f"base[{prompt}]")
        return value

    @model_validator(mode="after")
    def _bounds(self) -> SimulatedVLMRecallPolicy:
        if self.floor > self.ceiling:
            raise ValueError(f"floor {self.floor} is above ceiling {self.ceiling}")
        return self


SimulatedVLMPolicies = Annotated[
    Annotated[SimulatedVLMPolicy, Tag("choice")]
    | Annotated[SimulatedVLMRecallPolicy, Tag("planted_recall")],
    Discriminator(_policy_kind),
]


class SimulatedOpenVQAPolicy(Strict):
    """SIMULATOR: answers an open-set VQA question (OpenBias) from the image's planted class
    (``meta["truth"]``, recorded by the simulated t2i model): with ``unknown_rate`` it says
    ``unknown_text``, else with ``confusion`` another of ``meta["options"]`` uniformly, else
    the truth; the answer is written in one of ``phrasings`` (free text, mapped to a class
    by the methodology's real answer mapper), or refused with ``refusal_rate``."""

    confusion: Probability = 0.0
    unknown_rate: Probability = 0.0
    refusal_rate: Probability = 0.0
    phrasings: list[str] = Field(["{answer}"], min_length=1)
    unknown_text: str = "unknown"

    @field_validator("phrasings")
    @classmethod
    def _templates(cls, value: list[str]) -> list[str]:
        bad = [p for p in value if "{answer}" not in p]
        if bad:
            raise ValueError(f"every phrasing needs an {{answer}} placeholder: {bad}")
        return value


class SimulatedVLMConfig(_VLMBase, _Simulator):
    """SIMULATOR: a planted-bias VLM; labelled ``simulated`` everywhere."""

    backend: Literal["simulated"]
    model_id: str = "planted-bias-vlm-simulator"
    revision: str = "1"
    #: where the pictured person's demographic group is: the question's ``group``
    #: (:class:`~genfair.models.questions.ImageChoiceQuestion`); in the cache keys
    group_key: Literal["group"] = "group"
    #: named policies for questions that carry no ``plant`` (``meta["policy"]``): choice (no
    #: ``kind``) or ``planted_recall``; the built-in methodologies plant their own (their
    #: configs' ``simulated`` sections)
    policy: dict[str, SimulatedVLMPolicies] = {}
    #: named open-set VQA policies, likewise (OpenBias plants its own)
    open_vqa: dict[str, SimulatedOpenVQAPolicy] = {}


class ClipVLMConfig(_VLMBase):
    """CLIP zero-shot classification as a vlm (:mod:`genfair.models.clip`; paper 004's CLIP
    baseline): each image's answer is the class whose "a photo of a {class}" text embedding
    is closest to the image's. Answers the class whatever the question, so methodologies
    send it questions that ask for a class only. Weights from a local folder, never fetched."""

    backend: Literal["clip"]
    #: what the weights are (recorded; e.g. ``openai/clip-vit-base-patch32``)
    model_id: str
    #: local folder of a transformers ``CLIPModel`` checkpoint and its processor
    path: str
    revision: str = ""
    device: str = "cpu"
    batch_size: int = Field(16, gt=0, le=MAX_PARALLEL)
    #: the classes it chooses among (None: FACET's 52)
    classes: list[str] | None = Field(None, min_length=1)
    template: str = "a photo of a {}"
    #: ``spaced``: "basketball player" in the text; ``raw``: the released name
    class_display: Literal["raw", "spaced"] = "spaced"


VLMConfig = Annotated[
    HFVLMConfig | OpenAIVLMConfig | SimulatedVLMConfig | ClipVLMConfig,
    Field(discriminator="backend"),
]

_LLM_BACKENDS = ("hf", "embedded", "openai", "simulated")


def modality_of(value: Any) -> Any:
    """A model config's modality, raw (a dict) or validated: ``llm`` when absent (configs
    written before other modalities existed have none)."""
    return (
        value.get("modality", "llm")
        if isinstance(value, dict)
        else getattr(value, "modality", "llm")
    )


def _model_kind(value: Any) -> str | None:
    """The union tag of a model config: its ``backend`` for an llm, else its modality,
    whose own union is tagged by backend. Tags equal to a field's value are dropped from
    error paths by :func:`genfair.study_params.format_errors`."""
    backend = value.get("backend") if isinstance(value, dict) else getattr(value, "backend", None)
    modality = modality_of(value)
    return backend if modality == "llm" else modality


ModelConfig = Annotated[
    Annotated[HFModelConfig, Tag("hf")]
    | Annotated[EmbeddedModelConfig, Tag("embedded")]
    | Annotated[OpenAIModelConfig, Tag("openai")]
    | Annotated[SimulatedModelConfig, Tag("simulated")]
    | Annotated[T2IConfig, Tag("t2i")]
    | Annotated[VLMConfig, Tag("vlm")],
    Discriminator(_model_kind),
]
