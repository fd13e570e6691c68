"""Upper bounds of every count a config sets (pydantic ``le=``; the table in
docs/security.md "Counts are bounded"). Each is far above any published study, and low enough
that one such count alone cannot exhaust a machine; what a combination of counts needs is
estimated before probes are built (:mod:`genfair.study.footprint`)."""

from __future__ import annotations

#: samples of one prompt, images of one query or caption (papers: 100, 20, 10)
MAX_SAMPLES = 10_000
#: rounds, scenarios, captions per image, words per topic, classes: small structural counts
MAX_SMALL = 1_000
#: records, articles, captions, persons taken from a dataset (FACET: 49,551 persons)
MAX_RECORDS = 10_000_000
#: bootstrap or simulation replicates of one interval (papers: 1,000-2,000)
MAX_RESAMPLES = 1_000_000
#: calls a study may be allowed to make (``generation.max_calls``, a budget)
MAX_CALLS = 10**12
#: tokens one answer may have (the largest context windows: 128k)
MAX_TOKENS = 131_072
#: attempts of one call, retries of one request
MAX_ATTEMPTS = 100
#: requests in flight, a batch, threads
MAX_PARALLEL = 4_096
#: LDA passes and iterations (paper defaults: 10 and 100), diffusion steps
MAX_ITERATIONS = 100_000
#: an image side in pixels
MAX_SIDE = 16_384
#: characters of one text (a news body)
MAX_CHARS = 100_000_000
#: bytes of an input file read whole (FACET's annotations, the occupations tables, Flickr30k
#: captions, OpenBias's published proposals): each known release is under a twentieth of it,
#: and a 2 GiB file read whole took 4.3 GB resident (issue 44); streamed sources (news files)
#: bound each record instead
MAX_INPUT_FILE_BYTES = 512 * 2**20
