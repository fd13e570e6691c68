"""Generic orchestration: runs any registered methodology on any model of a study.

- :mod:`.layout` -- where every stage's outputs live;
- :mod:`.context` -- the contexts a methodology's steps receive (model, seed, folders,
  instruments, backend and cache);
- :mod:`.steps` -- probes, generate, label, metrics and the study-level step;
- :mod:`.scoring` -- leaderboards and headline metrics across models;
- :mod:`.tracking` -- MLflow runs (keyed by content hash: logs what the store lacks);
- :mod:`.report` -- the study report (``data/report/index.html``);
- :mod:`.curation` -- the curation and instrument-validation stages.
- :mod:`.code` -- a fingerprint of each methodology's code, for the cross-model stages.

Nothing here names a methodology: each one brings its own lifecycle through
:class:`genfair.methodologies.base.Methodology`.
"""
