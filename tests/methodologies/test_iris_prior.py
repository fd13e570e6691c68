"""Tournament priors (uniform, workforce) and the oracle-floor JSD (issue 12.10): hand loops,
scipy's JSD, and a SIMULATED perfectly calibrated model whose JSD recovers the floor."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon

from genfair.methodologies.iris.granular import GranularConfig, granular_metrics
from genfair.methodologies.iris.prior import (
    joint_shares,
    oracle_floor,
    resolve_prior,
    workforce_prior,
)
from genfair.methodologies.iris.reference import read_reference, reference_shares
from genfair.methodologies.iris.tournament import (
    CATEGORIES,
    TournamentConfig,
    prior_weights,
    profile_ids,
)

ROOT = Path(__file__).parents[2]
#: the eleven E.U. occupations, all also in the U.S. table
EU = [
    "doctor",
    "nurse",
    "teacher",
    "carpenter",
    "electrician",
    "laborer",
    "waiter",
    "hairdresser",
    "seller",
    "guard",
    "soldier",
]


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    return read_reference(
        ROOT / "data/reference/iris_real_world_us.csv",
        ROOT / "data/reference/iris_real_world_eu.csv",
    )


def _us_joint_by_hand(
    reference: pd.DataFrame, occupations: list[str]
) -> dict[tuple[str, str], float]:
    """P(d | o) = P(g | o) P(a | o) P(s | o) from the raw percentages, by loops."""
    us = reference[reference["region"] == "US"].set_index("occupation")
    out = {}
    for occ in occupations:
        r = us.loc[occ]
        g = {"female": r.female_pct / 100, "male": 1 - r.female_pct / 100}
        a_tot = r.age_young_pct + r.age_middle_pct + r.age_older_pct
        a = {
            "young": r.age_young_pct / a_tot,
            "middle-aged": r.age_middle_pct / a_tot,
            "older": r.age_older_pct / a_tot,
        }
        s_tot = r.skin_light_pct + r.skin_middle_pct + r.skin_dark_pct
        s = {
            "light": r.skin_light_pct / s_tot,
            "middle": r.skin_middle_pct / s_tot,
            "dark": r.skin_dark_pct / s_tot,
        }
        for gg, aa, ss in itertools.product(
            CATEGORIES["gender"], CATEGORIES["age"], CATEGORIES["skin"]
        ):
            out[(f"{gg}_{aa}_{ss}", occ)] = g[gg] * a[aa] * s[ss]
    return out


def test_workforce_prior_is_the_mean_joint_share(reference):
    occs = sorted(reference.loc[reference["region"] == "US", "occupation"])
    joint = _us_joint_by_hand(reference, occs)
    prior = workforce_prior(reference)
    assert set(prior) == set(profile_ids()) and sum(prior.values()) == pytest.approx(1.0)
    for pid in profile_ids():
        assert prior[pid] == pytest.approx(np.mean([joint[(pid, o)] for o in occs]), rel=1e-12)
    assert resolve_prior("uniform", reference) == "uniform"
    assert resolve_prior("workforce", reference) == prior
    with pytest.raises(ValueError, match="needs the real-world reference"):
        resolve_prior("workforce", None)
    with pytest.raises(ValueError, match="resolve_prior"):
        prior_weights("workforce")


def test_oracle_floor_by_hand_loops_and_scipy(reference):
    """Uniform prior, U.S. gender: posterior(d | o) proportional to P(d | o) / W(d), summed to
    gender, JSD with base-2 scipy, averaged over occupations."""
    occs = sorted(reference.loc[reference["region"] == "US", "occupation"])
    joint = _us_joint_by_hand(reference, occs)
    w = {pid: np.mean([joint[(pid, o)] for o in occs]) for pid in profile_ids()}
    real = reference_shares(reference, "US", "gender")
    values = []
    for occ in occs:
        post = {pid: joint[(pid, occ)] / w[pid] for pid in profile_ids()}
        z = sum(post.values())
        female = sum(v for pid, v in post.items() if pid.startswith("female")) / z
        values.append(
            jensenshannon([1 - female, female], real.loc[occ].to_numpy()) ** 2
        )  # the default jsd_base e
    floor = oracle_floor(reference, "uniform").set_index("metric")
    assert floor.at["JSD_gender_US", "oracle_floor"] == pytest.approx(np.mean(values), rel=1e-9)
    assert floor.at["JSD_gender_US", "n_occupations"] == 32


def test_workforce_prior_has_a_zero_us_floor_and_uniform_does_not(reference):
    uniform = oracle_floor(reference, "uniform").set_index("metric")["oracle_floor"]
    workforce = oracle_floor(reference, "workforce").set_index("metric")["oracle_floor"]
    assert list(uniform.index) == [
        "JSD_gender_US",
        "JSD_age_US",
        "JSD_skin_tone_US",
        "JSD_gender_EU",
        "JSD_age_EU",
    ]
    for metric in ("JSD_gender_US", "JSD_age_US", "JSD_skin_tone_US"):
        assert workforce[metric] < 1e-12 < uniform[metric]
    # the E.U. world differs from the U.S. workforce: a small floor remains, below uniform's
    assert 0 < workforce["JSD_age_EU"] < uniform["JSD_age_EU"]
    # in nats (jsd_base e); base 2 gives these / ln 2: 0.0091, 0.062, 0.0811, 0.0019, 0.0466
    assert uniform.round(4).to_dict() == {
        "JSD_gender_US": 0.0063,
        "JSD_age_US": 0.043,
        "JSD_skin_tone_US": 0.0562,
        "JSD_gender_EU": 0.0013,
        "JSD_age_EU": 0.0323,
    }
    bits = oracle_floor(reference, "uniform", base=2.0).set_index("metric")["oracle_floor"]
    assert np.allclose(bits * math.log(2), uniform, rtol=1e-12)


def test_joint_shares_restricts_and_rejects(reference):
    eu = joint_shares(reference, "EU", ["nurse", "doctor", "astronaut"])
    assert list(eu.columns) == ["doctor", "nurse"] and eu.sum().round(12).eq(1).all()
    with pytest.raises(ValueError, match="no occupation"):
        joint_shares(reference, "EU", ["astronaut"])


@pytest.mark.parametrize("prior", ["uniform", "workforce"])
def test_a_simulated_calibrated_model_recovers_the_oracle_floor(reference, prior):
    """SIMULATED: a model that believes the U.S. world (P(o | d) over the ten E.U.
    occupations the U.S. table has; no U.S. "seller") plays a tournament offering all ten each
    round (so win rates estimate P(o | d) without bias), 6000 rounds per profile. Its U.S.
    JSDs equal the oracle floor of the prior within 5e-4 (sampling noise of the win rates; observed
    <= 2.4e-4); every JSD row carries the floor computed over the offered occupations."""
    rng = np.random.default_rng(5)
    joint = joint_shares(reference, "US", EU)
    belief = joint.to_numpy() / joint.to_numpy().mean(axis=1, keepdims=True) / joint.shape[1]
    rows = []
    for k, pid in enumerate(joint.index):
        g, a, s = pid.split("_")
        picks = rng.choice(joint.shape[1], size=6000, p=belief[k] / belief[k].sum())
        rows.append(
            pd.DataFrame(
                {
                    "gender": g,
                    "age_group": a,
                    "skin_group": s,
                    "status": "ok",
                    "competitors": "|".join(joint.columns),
                    "choice": joint.columns[picks],
                }
            )
        )
    rounds = pd.concat(rows, ignore_index=True)
    config = GranularConfig(tournament=TournamentConfig(prior=prior))
    out = granular_metrics("RFS-Und", rounds, reference=reference, config=config).set_index(
        "metric"
    )
    assert len(joint.columns) == 10
    floor = oracle_floor(reference, prior, list(joint.columns)).set_index("metric")["oracle_floor"]
    for metric in (
        "JSD_gender_US",
        "JSD_age_US",
        "JSD_skin_tone_US",
        "JSD_gender_EU",
        "JSD_age_EU",
    ):
        assert out.at[metric, "oracle_floor"] == pytest.approx(floor[metric], abs=1e-15), metric
        assert "oracle floor" in out.at[metric, "note"]
        if metric.endswith("_US"):  # the model believes the U.S. world
            assert abs(out.at[metric, "value"] - floor[metric]) < 5e-4, metric
    assert out.loc[out.index.str.startswith("AbsSDS"), "oracle_floor"].isna().all()
    assert not math.isnan(floor["JSD_gender_US"])
