"""FACT-OR-FAIR (Huang et al., paper 000): factuality and fairness of LLM answers and of
text-to-image portraits.

The methodology (:class:`.methodology.FactOrFair`, registered as ``fact_or_fair``; config
:class:`.config.FactOrFairConfig`) wires these modules: :mod:`.data` (the 19 U.S.
statistics), :mod:`.probes` (objective and subjective queries), :mod:`.parsing` (answer ->
choice), :mod:`.scoring` (S_fact, S_E, S_KLD, S_fair, the trade-off distance),
:mod:`.uncertainty` (their intervals), :mod:`.prime_following` (§4.4), :mod:`.t2i` (the
text-to-image portraits, §3.3-3.4), :mod:`.report` and :mod:`.figures`.
"""

from genfair.methodologies.fact_or_fair.methodology import LABEL_COLUMNS, FactOrFair

__all__ = ["LABEL_COLUMNS", "FactOrFair"]
