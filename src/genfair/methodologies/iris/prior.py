"""Priors of the RFS-Und tournament's Bayes step and their oracle floor (paper 002 §D.2.5 Step 4).

The tournament estimates the model's belief ``P(o | d)`` per demographic profile ``d``; Bayes'
theorem with a prior ``pi(d)`` turns it into ``P(d | o)``, compared by JSD with the
real-world ``P(attribute | o)``. The paper names no prior.

- ``uniform``: every profile equally common (genfair's default): the posterior is the model's
  relative association of each profile with the occupation.
- ``workforce`` (:func:`workforce_prior`): each profile's share of the reference workforce,
  ``W(d) = mean_o prod_a P_US(a | o)`` over the U.S. table's occupations (the only table with
  all three attributes). The tables give marginals only, so within an occupation the three
  attributes are taken as independent; they give no employment counts, so every occupation
  weighs the same (the workforce of the studied occupations, not of the economy).

Oracle floor (:func:`oracle_floor`). A *perfectly calibrated* model believes the real world:
``P(o | d) = P(d | o) P(o) / P(d)`` with ``P(d | o) = prod_a P_R(a | o)``, equal ``P(o)`` and
``P(d) = mean_o P(d | o)`` (region R's table; an attribute the table lacks, E.U. skin, is a
constant factor that cancels). Its posterior under a prior ``pi`` is
``P(d | o) pi(d) / P(d)`` (normalised over d): exactly the real world when ``pi = P(d)``
(``workforce`` for the U.S.: floor 0), a distortion otherwise. The floor is the JSD [M5] that
this ideal model would score; a model's JSD is read against it. The floor takes the model's
beliefs as its estimate: a tournament offering every occupation in each round estimates
them without bias; subsets (5 of 52) add the win-rate estimator's own distortion, not included.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from genfair.methodologies.iris.core_metrics import bayes_invert
from genfair.methodologies.iris.reference import reference_shares
from genfair.methodologies.iris.tournament import (
    CATEGORIES,
    attribute_distributions,
    mean_jsd,
    prior_weights,
    profile_ids,
    profiles,
)

__all__ = ["FLOOR_COLUMNS", "joint_shares", "oracle_floor", "resolve_prior", "workforce_prior"]

FLOOR_COLUMNS = ["region", "attribute", "metric", "prior", "oracle_floor", "n_occupations"]
#: RFS-Und JSD metric names (Table 6) per region and attribute
JSD_METRIC = {
    (r, a): f"JSD_{'skin_tone' if a == 'skin' else a}_{r}" for r in ("US", "EU") for a in CATEGORIES
}

Prior = Literal["uniform", "workforce"] | Mapping[str, float]


def joint_shares(
    reference: pd.DataFrame, region: str, occupations: Sequence[str] | None = None
) -> pd.DataFrame:
    """``P(d | o)`` (profiles x occupations) = prod_a P_region(a | o), attributes independent
    within an occupation; an attribute the region's table lacks is uniform (a constant factor).
    Occupations: those with every attribute the region has (optionally only ``occupations``)."""
    shares: dict[str, pd.DataFrame] = {}
    for attr in CATEGORIES:
        try:
            share = reference_shares(reference, region, attr)
        except ValueError as exc:
            if "lacks column" not in str(exc):
                raise
            continue
        if not share.empty:  # stacked tables: E.U. rows have empty skin columns
            shares[attr] = share
    if "gender" not in shares:
        raise ValueError(f"reference ({region}) has no gender shares: no occupation to weigh")
    occs = sorted(set.intersection(*(set(s.index) for s in shares.values())))
    if occupations is not None:
        occs = [o for o in occs if o in set(occupations)]
    if not occs:
        raise ValueError(
            f"reference ({region}) shares no occupation with all its attributes"
            + (f" among {list(occupations)[:5]}..." if occupations is not None else "")
        )
    joint = np.ones((len(profile_ids()), len(occs)))
    for k, prof in enumerate(profiles()):
        for attr, cat in prof.items():
            if attr in shares:
                joint[k] *= shares[attr].loc[occs, cat].to_numpy(float)
            else:
                joint[k] *= 1.0 / len(CATEGORIES[attr])
    return pd.DataFrame(
        joint,
        index=pd.Index(profile_ids(), name="profile"),
        columns=pd.Index(occs, name="occupation"),
    )


def workforce_prior(
    reference: pd.DataFrame, occupations: Sequence[str] | None = None, region: str = "US"
) -> dict[str, float]:
    """``W(d) = mean_o P(d | o)`` over the region's occupations (default U.S.: all three
    attributes), a weight per profile id summing to 1."""
    weights = joint_shares(reference, region, occupations).mean(axis=1)
    return {pid: float(w) for pid, w in (weights / weights.sum()).items()}


def resolve_prior(
    prior: Prior, reference: pd.DataFrame | None, occupations: Sequence[str] | None = None
) -> Literal["uniform"] | dict[str, float]:
    """``uniform`` and weight dicts unchanged; ``workforce`` turned into its weights."""
    if isinstance(prior, str) and prior == "workforce":
        if reference is None:
            raise ValueError("tournament.prior 'workforce' needs the real-world reference table")
        return workforce_prior(reference, occupations)
    return prior if isinstance(prior, str) else dict(prior)


def oracle_floor(
    reference: pd.DataFrame,
    prior: Prior = "uniform",
    occupations: Sequence[str] | None = None,
    base: float = math.e,
) -> pd.DataFrame:
    """The JSD [M5] (log ``base``) a perfectly calibrated model scores under ``prior``, per
    region and attribute of Table 6 (rows :data:`FLOOR_COLUMNS`; see the module docstring).
    A region without data for the occupations gives NaN rows."""
    label = prior if isinstance(prior, str) else "custom"
    weights = prior_weights(resolve_prior(prior, reference, occupations))
    rows = []
    for region in ("US", "EU"):
        attrs = [
            a
            for a in CATEGORIES
            if (region, a) in JSD_METRIC and not (region == "EU" and a == "skin")
        ]
        try:
            joint = joint_shares(reference, region, occupations)
        except ValueError:
            rows += [
                {
                    "region": region,
                    "attribute": a,
                    "metric": JSD_METRIC[(region, a)],
                    "prior": label,
                    "oracle_floor": math.nan,
                    "n_occupations": 0,
                }
                for a in attrs
            ]
            continue
        lik = joint.to_numpy()
        belief = lik / lik.mean(axis=1, keepdims=True) / lik.shape[1]  # P(o | d), rows sum to 1
        post = pd.DataFrame(bayes_invert(belief, weights), index=joint.index, columns=joint.columns)
        for attr in attrs:
            value, n, _ = mean_jsd(
                attribute_distributions(post, attr), reference_shares(reference, region, attr), base
            )
            rows.append(
                {
                    "region": region,
                    "attribute": attr,
                    "metric": JSD_METRIC[(region, attr)],
                    "prior": label,
                    "oracle_floor": value,
                    "n_occupations": n,
                }
            )
    return pd.DataFrame(rows, columns=FLOOR_COLUMNS)
