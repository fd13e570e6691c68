"""OpenBias (paper 003, D'Incà et al., CVPR 2024): open-set bias discovery and severity for
text-to-image models.

The methodology (:class:`.methodology.OpenBias`, registered as ``open_bias``) wires these modules:

- :mod:`.captions` -- the project's caption set and loaders for COCO and Flickr30k captions;
- :mod:`.inputs` -- the captions a study runs on, and the authors' proposals of them;
- :mod:`.proposals` -- the authors' bias-proposal prompt, the typed proposal record, the parser
  of LLM output and a JSON schema for constrained decoding;
- :mod:`.knowledge_base` -- the authors' post-processing of proposals into the knowledge base;
- :mod:`.published` -- the authors' released bias proposals (COCO, Flickr30k) as input;
- :mod:`.probes` -- the three probe tables (proposal chats, images, VQA questions) and the
  collection of proposals with their statuses;
- :mod:`.vqa` -- the VQA question, its choices and the answer -> class mapping and labels;
- :mod:`.scoring` -- labels -> per-caption counts -> severities and rankings (the math is in
  :mod:`genfair.methodologies.open_bias.severity`);
- :mod:`.config` -- :class:`~.config.OpenBiasConfig`, every knob;
- :mod:`.scripted` -- the SCRIPTED proposer (fixed answers per caption, the test double);
- :mod:`.report` -- its presentation role: figures, report title, samples;
- :mod:`.figures` -- the severity ranking and context-aware vs context-free figures.

Decisions and differences from the authors' code: ``docs/methodology.md`` (OpenBias section).
"""

from genfair.methodologies.open_bias.methodology import OpenBias

__all__ = ["OpenBias"]
