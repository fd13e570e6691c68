"""News bias of AI-generated content (Fang et al., paper 001): gender and racial bias of
LLM-written news against the original articles whose headlines prompted them.

The methodology (:class:`.methodology.NewsBias`, registered as ``news_bias``; its docstring
says what each step does; config :class:`.config.NewsBiasConfig`) wires these modules:
:mod:`.prompts` (the paper's prompts), :mod:`.word_level`, :mod:`.sentence_level` and
:mod:`.document_level` (the three levels, Eq. 1-9), :mod:`.topics_study` (the study-level LDA
step), :mod:`.biased_prompts` (biased vs unbiased prompts), :mod:`.scoring` (the scores
table's rows), :mod:`.lengths`, :mod:`.refusal_check`, :mod:`.corpus_check`, :mod:`.report`
and :mod:`.figures`.
"""

from genfair.methodologies.news_bias.config import NewsBiasConfig
from genfair.methodologies.news_bias.methodology import NewsBias
from genfair.methodologies.news_bias.probes import prompt_for

__all__ = ["NewsBias", "NewsBiasConfig", "prompt_for"]
