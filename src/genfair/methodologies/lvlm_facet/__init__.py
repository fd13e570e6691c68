"""``lvlm_facet``: fairness of vision-language models on FACET (paper 004, Wu et al.).

A model is shown FACET images with exactly one annotated person and asked what the person
is, in an open form (the direct question listing FACET's 52 classes) and a closed form
(single-choice questions about the image's true class: A. Yes, B. No, C. Unknown). Answers
are matched to the labels (:mod:`.matching`), and recall per class and demographic group
(gender presentation, skin tone, age) gives the disparities (:mod:`.recall`).

The methodology (:class:`.methodology.LvlmFacet`, registered as ``lvlm_facet``; config
:class:`.config.LvlmFacetConfig`) wires the core modules: :mod:`.groups` (selection and
groups), :mod:`.prompts` (paper Table 3), :mod:`.probes` (probe rows), :mod:`.matching`
(answer -> label), :mod:`.labels` (responses -> the labelled table), :mod:`.scoring`
(labelled responses -> recall and disparity tables, scores), :mod:`.report` (its
presentation: figures, report title, samples), :mod:`.figures`,
:mod:`.synthetic` (a SIMULATED FACET-schema table and planted-recall answers) and
:mod:`.clip_baseline` (CLIP, the paper's CLIP row; the model kind is ``backend: clip``,
:mod:`genfair.models.clip`).
"""

from genfair.methodologies.lvlm_facet.methodology import LvlmFacet

__all__ = ["LvlmFacet"]
