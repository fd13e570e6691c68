"""IRIS (Zhao et al., paper 002): fairness of unified multimodal models in generation and
understanding, along three dimensions (Ideal Fairness, Real-world Fidelity, Bias Inertia &
Steerability) in six sectors (IFS-Gen, RFS-Gen, BIS-Gen, IFS-Und, RFS-Und, BIS-Und).

- :mod:`.granular` -- the 60 granular metrics of Table 6 over labelled tables;
- :mod:`.tournament` -- the RFS-Und blank-image tournament: probe design, answer parsing,
  win counts and the Bayes inversion; :mod:`.prior` -- its priors (uniform, workforce) and
  oracle-floor JSD; :mod:`.reference` -- the U.S./E.U. real-world shares;
- :mod:`.probes` -- the paper's prompt templates, the BIS-Gen stereotype selection and
  the BIS-Und questions of Table 29;
- :mod:`.scoring` -- sector and overall scores (S/K calibration), codes; :mod:`.study` --
  the study-level step over every model; :mod:`.validation` -- Cronbach's alpha and
  ranking stability; :mod:`.validity` -- Fig. 4(c) sector correlation and Fig. 4(d) Welch
  test by architecture; :mod:`.figures` -- Fig. 4(c)'s heat map.

The class is in :mod:`.methodology` (its presentation role in :mod:`.report`), its config in
:mod:`.config` (the simulators' plants in :mod:`.simulated`), the occupation table as the
study uses it in :mod:`.occupations`.
The core metric math lives in :mod:`.core_metrics` and :mod:`genfair.metrics`.
"""

from genfair.methodologies.iris.config import IrisConfig
from genfair.methodologies.iris.methodology import Iris

__all__ = ["Iris", "IrisConfig"]
