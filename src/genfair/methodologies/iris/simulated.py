"""``methodologies.iris.simulated``: what the SIMULATORS plant when they answer IRIS.

Each call carries its sector's policy (a question's ``plant``), so editing one reruns only
IRIS's simulated calls; a real model never reads them. The sector scores of a simulated model
must recover them (``tests/methodologies/test_iris_understanding.py``).
"""

from __future__ import annotations

from genfair.models.config import SimulatedPolicy, SimulatedT2IPolicy, SimulatedVLMPolicy
from genfair.strict import Strict

# IFS-Gen and BIS-Gen: the same distribution for every occupation; the simulator ignores the
# steering words of BIS-Gen prompts (a model with no steerability)
_GEN_ATTRIBUTES = {
    "gender": {"male": 0.7, "female": 0.3},
    "age": {"young": 0.6, "middle-aged": 0.3, "older": 0.1},
    "skin_tone": {"light": 0.7, "middle": 0.2, "dark": 0.1},
}


class LLMPlants(Strict):
    """RFS-Und's tournament: the gender-stereotyped competitor (highest real-world female
    share for a female profile, lowest for a male one) with ``accuracy``, else another."""

    tournament: SimulatedPolicy = SimulatedPolicy(
        accuracy=0.8, refusal_rate=0.02, invalid_rate=0.03
    )


class T2IPlants(Strict):
    """IFS-Gen's and BIS-Gen's planted attribute distributions; ``bis_gen_counter``: the
    counter-stereotypical prompts' own (None: ``bis_gen``, the default), e.g. with planted
    per-image ``scores`` lower than ``bis_gen``'s: a quality or semantic drop that the
    instruments' oracle STAND-INs read back."""

    ifs_gen: SimulatedT2IPolicy = SimulatedT2IPolicy(
        attributes=_GEN_ATTRIBUTES, refusal_rate=0.05, no_person_rate=0.02
    )
    bis_gen: SimulatedT2IPolicy = SimulatedT2IPolicy(attributes=_GEN_ATTRIBUTES, refusal_rate=0.05)
    bis_gen_counter: SimulatedT2IPolicy | None = None

    def plant(self, prompt_type: str) -> SimulatedT2IPolicy:
        """The plant of a BIS-Gen prompt (``stereotypical`` or ``counter``)."""
        if prompt_type == "counter" and self.bis_gen_counter is not None:
            return self.bis_gen_counter
        return self.bis_gen


class VLMPlants(Strict):
    """The understanding sectors: the right answer with the accuracy of the person's gender
    (IFS-Und: the crop's occupation among the 52; BIS-Und: objective questions right and
    subjective ones rated 7, the unbiased rating; RFS-Und on a blank image: the stereotyped
    competitor)."""

    ifs_und: SimulatedVLMPolicy = SimulatedVLMPolicy(
        accuracy={"male": 0.9, "female": 0.6}, default_accuracy=0.75, refusal_rate=0.02
    )
    tournament: SimulatedVLMPolicy = SimulatedVLMPolicy(
        accuracy={"male": 0.8, "female": 0.8}, refusal_rate=0.02
    )
    bis_und: SimulatedVLMPolicy = SimulatedVLMPolicy(
        accuracy={"male": 0.9, "female": 0.6}, default_accuracy=0.75
    )


class SimulatedPlants(Strict):
    """Per simulated modality, the plant of each sector it answers."""

    llm: LLMPlants = LLMPlants()
    t2i: T2IPlants = T2IPlants()
    vlm: VLMPlants = VLMPlants()
