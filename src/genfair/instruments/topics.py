"""LDA topic instrument for the document level bias of news (paper 001, Methods,
"Evaluating Document Level Bias").

The paper trains gensim LDA on the corpus of original plus generated articles, tokenised and
lemmatised with spaCy, stop words kept (Appendix B, after Schofield et al. 2017), picks the
number of topics from K = 200, 250, 300 by perplexity on held-out documents, infers each
article's topic distribution ``t_d`` and gives each sentence its most probable topic.

Lemmatiser: spaCy is not a dependency, and neither ``simplemma`` nor NLTK's WordNet data is
available offline, so lemmatisation is a hook: :func:`tokenize` takes any
``Callable[[str], str]`` and the default, :func:`identity_lemmatizer`, keeps word forms
unchanged. Inference (:func:`sentence_topics`, :func:`document_topics`) draws its variational
starting point from a generator seeded per call, so its output depends only on its inputs.

Determinism across machines (issues 16.10, 23.6): the LDA runs in float64 (gensim's
default is float32) with the BLAS limited to one thread (:func:`single_threaded`, via
threadpoolctl), so the order of every sum is the same whatever the number of cores or the
``*_NUM_THREADS`` variables (``tests/instruments/test_topics_determinism.py``). Why float64:
numpy picks the SIMD kernel of ``np.exp`` and ``np.log`` by CPU, and its float32 kernels
(AVX2/AVX-512 vs the x86-64-v2 baseline) differ in the last bit for about 40% of ``exp``
values; the variational updates carry that 6e-8 to about 5e-6 relative in the held-out bound,
topic-word weights and topic shares (measured, 2-3 topics and 20-40 topics alike), far past
the 10 significant digits every output is written at (:data:`genfair.io.FLOAT_DIGITS`). In
float64 the same comparison (numpy's baseline kernels and OpenBLAS's ``Nehalem`` or
``Sandybridge`` kernel vs this machine's AVX2 ``Haswell``) differs by at most 5e-14 relative
in the bound and topic-word weights and 1e-12 in topic shares, which the writer's rounding
absorbs unless a value lies that close to a rounding boundary. ``K`` is chosen on the
perplexities as written (rounded to ``FLOAT_DIGITS``), ties to the smaller ``K``. A
discrete output (a sentence's topic) can still flip only where two topic shares tie within
that 1e-12 margin.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
from gensim.corpora import Dictionary
from gensim.models import LdaModel
from gensim.utils import get_random_state

from genfair.io import round_float
from genfair.logs import progress

__all__ = [
    "Lemmatizer",
    "choose_num_topics",
    "document_topics",
    "fit_lda",
    "identity_lemmatizer",
    "sentence_topics",
    "tokenize",
]

#: Maps one lower-cased token to its lemma.
Lemmatizer = Callable[[str], str]

# Runs of letters/digits, with internal apostrophes kept ("china's", "don't").
_TOKEN = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")

# Documents per inference batch: bounds the (batch x K) variational matrix.
_BATCH = 2000


@contextmanager
def single_threaded() -> Iterator[None]:
    """BLAS and OpenMP pools limited to one thread while the block runs: a multi-threaded
    BLAS splits a product's sums by thread count, which changes their rounding."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


def identity_lemmatizer(token: str) -> str:
    """The default lemmatiser: the token unchanged (no lemmatiser is available offline)."""
    return token


def tokenize(text: str, lemmatizer: Lemmatizer = identity_lemmatizer) -> list[str]:
    """Lower-cased word tokens of ``text``, each passed through ``lemmatizer``.

    Punctuation is dropped, tokens without a letter (numbers) are dropped, internal
    apostrophes are kept, and stop words are KEPT as the paper does (Appendix B).
    """
    tokens = (m.group(0) for m in _TOKEN.finditer(text.lower()))
    return [lemmatizer(t) for t in tokens if any(c.isalpha() for c in t)]


def fit_lda(
    documents: Sequence[Sequence[str]],
    num_topics: int,
    seed: int,
    passes: int = 10,
    iterations: int = 100,
    chunksize: int = 2000,
    dictionary: Dictionary | None = None,
) -> tuple[LdaModel, Dictionary]:
    """Train gensim LDA on tokenised ``documents``; deterministic for a given ``seed``.

    Paper 001, Methods, "Evaluating Document Level Bias": LDA (Blei et al.) trained with
    gensim on the news corpus with ``K`` topics. The dictionary is built from ``documents``
    unless one is given (held-out evaluation reuses the training dictionary); no frequency
    filtering is applied, since the paper reports none. Priors are gensim's defaults
    (symmetric ``alpha = eta = 1/K``); arithmetic is float64, not gensim's float32, so the
    fit is the same to 10 digits on every CPU (see the module's docstring).
    """
    if num_topics < 1:
        raise ValueError(f"num_topics must be >= 1; got {num_topics}")
    vocab = Dictionary(documents) if dictionary is None else dictionary
    corpus = [vocab.doc2bow(doc) for doc in documents]
    if not any(corpus):
        raise ValueError("documents contain no tokens of the dictionary")
    with single_threaded():
        model = LdaModel(
            corpus=corpus,
            id2word=vocab,
            num_topics=num_topics,
            random_state=seed,
            passes=passes,
            iterations=iterations,
            chunksize=chunksize,
            eval_every=None,
            dtype=np.float64,  # float32's exp/log differ by CPU: module docstring
        )
    return model, vocab


def choose_num_topics(
    documents: Sequence[Sequence[str]],
    grid: Sequence[int],
    holdout_fraction: float,
    seed: int,
    passes: int = 10,
    iterations: int = 100,
) -> tuple[int, pd.DataFrame]:
    """Pick ``K`` from ``grid`` by perplexity on held-out documents (lowest wins).

    Paper 001, Methods: LDA was trained for K = 200, 250, 300 and K = 250 "gave us the best
    perplexity score on a sample of held-out documents". Documents are shuffled with
    ``seed``; a ``holdout_fraction`` share is held out, LDA is fitted on the rest for each
    ``K`` and scored with ``LdaModel.log_perplexity`` (a per-word variational bound; held-out
    words missing from the training dictionary are ignored). Perplexity is
    ``2 ** (-bound)``, the value gensim itself reports; any monotone transform of the bound
    selects the same ``K``. ``K`` is chosen on the perplexities rounded as the table is
    written (:func:`genfair.io.round_float`), so the choice is the one the table shows on any
    CPU; ties go to the smaller ``K``.

    Returns ``(best_k, table)`` with one row per ``K``: ``num_topics``, ``per_word_bound``,
    ``perplexity``.
    """
    if not grid:
        raise ValueError("grid must list at least one number of topics")
    if not 0.0 < holdout_fraction < 1.0:
        raise ValueError(f"holdout_fraction must lie in (0, 1); got {holdout_fraction}")
    order = np.random.default_rng(seed).permutation(len(documents))
    n_held = max(1, round(holdout_fraction * len(documents)))
    if n_held >= len(documents):
        raise ValueError(f"{len(documents)} documents leave none for training")
    train = [documents[i] for i in order[n_held:]]
    vocab = Dictionary(train)
    held = [bow for bow in (vocab.doc2bow(documents[i]) for i in order[:n_held]) if bow]
    if not held:
        raise ValueError("no held-out document shares a word with the training documents")
    rows = []
    for k in progress(sorted(set(grid)), desc="LDA grid (held-out perplexity)", unit="K", every=10):
        model, _ = fit_lda(train, k, seed, passes=passes, iterations=iterations, dictionary=vocab)
        with single_threaded():
            bound = float(model.log_perplexity(held))
        rows.append({"num_topics": k, "per_word_bound": bound, "perplexity": 2.0 ** (-bound)})
    table = pd.DataFrame(rows)
    # rows are in increasing K: idxmin's first minimum is the smaller K of a tie
    best = int(table.loc[table["perplexity"].map(round_float).idxmin(), "num_topics"])
    return best, table


def _topic_distributions(
    model: LdaModel, dictionary: Dictionary, token_lists: Sequence[Sequence[str]], seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Normalised variational topic distributions (n x K) and a mask of non-empty inputs."""
    bows = [dictionary.doc2bow(tokens) for tokens in token_lists]
    theta = np.zeros((len(bows), model.num_topics))
    saved = model.random_state
    model.random_state = get_random_state(seed)
    try:
        for start in range(0, len(bows), _BATCH):
            with single_threaded():
                gamma, _ = model.inference(bows[start : start + _BATCH])
            theta[start : start + len(gamma)] = gamma / gamma.sum(axis=1, keepdims=True)
    finally:
        model.random_state = saved
    return theta, np.array([bool(bow) for bow in bows], dtype=bool)


def sentence_topics(
    model: LdaModel,
    dictionary: Dictionary,
    sentences: Sequence[Sequence[str]],
    seed: int = 0,
) -> np.ndarray:
    """Most probable topic of each tokenised sentence (int array; -1 = no known word).

    Paper 001, Methods: "it is reasonable to assume that one sentence is mainly about one
    topic ... we identified the topic with the largest probability in the topic distribution
    and assigned it to the sentence". A sentence none of whose tokens is in ``dictionary``
    has only the prior as its distribution and gets ``-1`` instead of an arbitrary topic.
    """
    theta, known = _topic_distributions(model, dictionary, sentences, seed)
    return np.where(known, theta.argmax(axis=1), -1).astype(int)


def document_topics(
    model: LdaModel,
    dictionary: Dictionary,
    documents: Sequence[Sequence[str]],
    minimum_probability: float = 0.01,
    seed: int = 0,
) -> np.ndarray:
    """Topic distribution ``t_d`` of each tokenised article (n x K), paper 001 Eq. 8 input.

    The paper's ``t_{d,k}`` is "the proportion of content in news article d that is devoted
    to discuss topic k", inferred by the trained LDA. Entries below ``minimum_probability``
    are set to 0 (not renormalised), as gensim's ``get_document_topics`` does with its
    default 0.01; pass 0 to keep the full distribution. An article with no known word gets
    an all-zero row.
    """
    theta, known = _topic_distributions(model, dictionary, documents, seed)
    theta[theta < minimum_probability] = 0.0
    theta[~known] = 0.0
    return theta
