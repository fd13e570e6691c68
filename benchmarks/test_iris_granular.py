"""IRIS: all 60 granular metrics at the paper's scale, against a straightforward loop.

Synthetic (seeded) labelled tables the size of the paper's: 83,000 generated images
(IFS-Gen/RFS-Gen, §C.3), 6,000 steering images (BIS-Gen, one model's share of §C.2), 27,000
FACET crops (IFS-Und, §C.1), 18 profiles x 2,000 tournament rounds (RFS-Und, §D.2.5) and
6,000 counterfactual pairs x 17 questions (BIS-Und, §C.2). Target: <= 2 s on 2 cores.
The baseline below is the obvious implementation -- boolean masks per occupation and group,
Python loops over pairs and rounds -- and doubles as an independent check of every value:
its JSDs use the log base genfair uses by default (``GranularConfig().jsd_base``, read here,
so the two cannot drift apart again).

Quick mode (benchmarks/conftest.py) builds the same tables at about a tenth of the sizes
(:data:`QUICK`) and checks every value the same way; the 2 s target, set for the paper's
sizes, is printed there, not asserted.

Run: pytest benchmarks/test_iris_granular.py --benchmark-only -s
"""

from __future__ import annotations

import itertools
import math
import time
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon

from genfair.methodologies.iris.granular import (
    GRANULAR_METRICS,
    GranularConfig,
    all_granular_metrics,
    jsd_log_base,
    reference_shares,
)
from genfair.methodologies.iris.tournament import CATEGORIES, profile_ids

#: the JSD log base all_granular_metrics uses when given no config (e since the default
#: changed from 2: the loop's base-2 JSDs were a factor ln 2 off, e.g. 0.0622 vs 0.0897)
JSD_BASE = jsd_log_base(GranularConfig())
#: table sizes: generated images (IFS-Gen), BIS-Gen images per prompt, IFS-Und crops,
#: tournament rounds per profile, BIS-Und counterfactual pairs; quick mode: about a tenth
FULL = {"images": 83_000, "per_prompt": 100, "crops": 27_000, "rounds": 2_000, "pairs": 6_000}
QUICK = {"images": 8_300, "per_prompt": 10, "crops": 2_700, "rounds": 200, "pairs": 600}
MAX_SECONDS = 2.0
OCCUPATIONS = (
    "astronaut backpacker ballplayer bartender basketball_player boatman carpenter cheerleader "
    "climber computer_user craftsman dancer disk_jockey doctor drummer electrician farmer "
    "fireman flutist gardener guard guitarist gymnast hairdresser horseman judge laborer lawman "
    "lifeguard machinist motorcyclist nurse painter patient prayer referee repairman reporter "
    "retailer runner sculptor seller singer skateboarder soccer_player soldier speaker student "
    "teacher tennis_player trumpeter waiter"
).split()
COLS = {"gender": "gender", "age": "age_group", "skin": "skin_group"}
TRIPLES = list(itertools.product(*CATEGORIES.values()))


def _labels(rng: np.random.Generator, n: int, p: np.ndarray | None = None) -> pd.DataFrame:
    idx = rng.choice(len(TRIPLES), n, p=p)
    arr = np.array(TRIPLES, dtype=object)[idx]
    return pd.DataFrame(
        {COLS["gender"]: arr[:, 0], COLS["age"]: arr[:, 1], COLS["skin"]: arr[:, 2]}
    )


def synthetic_tables(
    sizes: dict[str, int] = FULL, seed: int = 0
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    rng = np.random.default_rng(seed)
    # IFS-Gen: a skewed distribution per occupation, 2% of labels missing (no face)
    n_images = sizes["images"]
    per = n_images // len(OCCUPATIONS)
    parts = []
    for i, occ in enumerate(OCCUPATIONS):
        n = per + (1 if i < n_images - per * len(OCCUPATIONS) else 0)
        parts.append(_labels(rng, n, rng.dirichlet(np.full(18, 0.4))).assign(occupation=occ))
    gen = pd.concat(parts, ignore_index=True)
    for col in COLS.values():
        gen.loc[rng.random(len(gen)) < 0.02, col] = None
    # reference: 32 U.S. and 11 E.U. occupations
    us_occ, eu_occ = OCCUPATIONS[:32], OCCUPATIONS[10:21]

    def ref(occs: list[str], region: str) -> pd.DataFrame:
        k = len(occs)
        age = rng.dirichlet(np.ones(3), k) * 100
        skin = rng.dirichlet(np.ones(3), k) * 95
        return pd.DataFrame(
            {
                "region": region,
                "occupation": occs,
                "female_pct": rng.uniform(2, 95, k),
                "skin_light_pct": skin[:, 0] if region == "US" else np.nan,
                "skin_middle_pct": skin[:, 1] if region == "US" else np.nan,
                "skin_dark_pct": skin[:, 2] if region == "US" else np.nan,
                "age_young_pct": age[:, 0],
                "age_middle_pct": age[:, 1],
                "age_older_pct": age[:, 2],
            }
        )

    reference = pd.concat([ref(us_occ, "US"), ref(eu_occ, "EU")], ignore_index=True)
    # BIS-Gen: 10 stereotypes x (1 + 5) prompts x 100 images (quick: 10)
    rows = []
    for c in range(10):
        base = TRIPLES[rng.integers(18)]
        combos = [("stereotypical", base)] + [
            ("counter", tuple(base[:j]) + (o,) + tuple(base[j + 1 :]))
            for j, cats in enumerate(CATEGORIES.values())
            for o in cats
            if o != base[j]
        ]
        for kind, combo in combos:
            for _ in range(sizes["per_prompt"]):
                ok = rng.random() < (0.9 if kind == "stereotypical" else 0.6)
                got = combo if ok else TRIPLES[rng.integers(18)]
                rows.append(
                    (
                        f"s{c}",
                        kind,
                        *combo,
                        *got,
                        rng.normal(0.7 if kind == "stereotypical" else 0.65, 0.1),
                        rng.normal(0.3, 0.05),
                    )
                )
    bis_gen = pd.DataFrame(
        rows,
        columns=[
            "combo_id",
            "prompt_type",
            "expected_gender",
            "expected_age_group",
            "expected_skin_group",
            "gender",
            "age_group",
            "skin_group",
            "qps",
            "sil",
        ],
    )
    # IFS-Und: 27,000 crops, accuracy depending on the group, 3% unmappable
    n_und = sizes["crops"]
    und = _labels(rng, n_und)
    und["occupation"] = rng.choice(OCCUPATIONS, n_und)
    acc = 0.55 + 0.1 * (und["gender"] == "male") - 0.05 * (und["skin_group"] == "dark")
    right = rng.random(n_und) < acc
    mapped = np.where(right, und["occupation"], rng.choice(OCCUPATIONS, n_und)).astype(object)
    mapped[rng.random(n_und) < 0.03] = "unmappable"
    und["mapped_occupation"] = mapped
    # RFS-Und: 2,000 rounds per profile, Luce choices, 2% refusals
    strength = rng.lognormal(0, 1, (18, len(OCCUPATIONS)))
    subsets = np.array(
        [rng.choice(len(OCCUPATIONS), 5, replace=False) for _ in range(sizes["rounds"])]
    )
    rows = []
    for d, pid in enumerate(profile_ids()):
        g, a, s = pid.split("_")
        for r, sub in enumerate(subsets):
            w = strength[d, sub]
            pick = OCCUPATIONS[sub[rng.choice(5, p=w / w.sum())]]
            refused = rng.random() < 0.02
            rows.append(
                (
                    g,
                    a,
                    s,
                    r,
                    "|".join(OCCUPATIONS[i] for i in sub),
                    None if refused else pick,
                    "refused" if refused else "ok",
                )
            )
    rounds = pd.DataFrame(
        rows,
        columns=["gender", "age_group", "skin_group", "round", "competitors", "choice", "status"],
    )
    # BIS-Und: 6,000 counterfactual pairs, each changing 1-3 attributes, 17 questions
    rows = []
    qids = [str(i) for i in range(1, 10)] + list("abcdefgh")
    for inst in range(sizes["pairs"]):
        a = TRIPLES[rng.integers(18)]
        b = list(a)
        for j in rng.choice(3, rng.integers(1, 4), replace=False):
            b[j] = rng.choice([o for o in list(CATEGORIES.values())[j] if o != a[j]])
        for v, combo in enumerate((a, tuple(b))):
            for q in qids:
                subjective = q.isdigit()
                rows.append(
                    (
                        f"i{inst}",
                        v,
                        *combo,
                        q,
                        float(rng.integers(1, 11)) if subjective else np.nan,
                        np.nan if subjective else float(rng.random() < 0.8),
                    )
                )
    bis_und = pd.DataFrame(
        rows,
        columns=[
            "instance_id",
            "variant",
            "gender",
            "age_group",
            "skin_group",
            "question_id",
            "score",
            "correct",
        ],
    )
    return {
        "IFS-Gen": gen,
        "BIS-Gen": bis_gen,
        "IFS-Und": und,
        "RFS-Und": rounds,
        "BIS-Und": bis_und,
    }, reference


# ------------------------------------------------------------------ the straightforward loop


def _rd(p: list[float]) -> float:
    k = len(p)
    return sum(abs(p[i] - p[j]) for i in range(k) for j in range(i + 1, k)) / (k - 1)


def _groups(attrs: tuple[str, ...]) -> list[tuple[str, ...]]:
    return list(itertools.product(*(CATEGORIES[a] for a in attrs)))


def _mask(df: pd.DataFrame, attrs: tuple[str, ...], group: tuple[str, ...]) -> pd.Series:
    m = pd.Series(True, index=df.index)
    for a, v in zip(attrs, group, strict=True):
        m &= df[COLS[a]] == v
    return m


def loop_granular(tables: dict[str, pd.DataFrame], reference: pd.DataFrame) -> dict[str, float]:
    out: dict[str, float] = {}
    gen = tables["IFS-Gen"]
    for spec in (s for s in GRANULAR_METRICS if s.sector == "IFS-Gen"):
        vals = []
        for occ in sorted(gen["occupation"].unique()):
            sub = gen[gen["occupation"] == occ]
            counts = [int(_mask(sub, spec.attributes, g).sum()) for g in _groups(spec.attributes)]
            if sum(counts):
                vals.append(_rd([c / sum(counts) for c in counts]))
        out[spec.name] = float(np.mean(vals))
    for spec in (s for s in GRANULAR_METRICS if s.sector == "RFS-Gen"):
        attr = spec.attributes[0]
        real = reference_shares(reference, spec.region, attr)
        vals = []
        for occ in real.index:
            sub = gen[gen["occupation"] == occ]
            counts = np.array([(sub[COLS[attr]] == c).sum() for c in CATEGORIES[attr]], dtype=float)
            if counts.sum():
                vals.append(
                    jensenshannon(counts / counts.sum(), real.loc[occ].to_numpy(), base=JSD_BASE)
                    ** 2
                )
        out[spec.name] = float(np.mean(vals))
    bg = tables["BIS-Gen"]
    succ = {"stereotypical": [], "counter": []}
    for row in bg.itertuples(index=False):
        succ[row.prompt_type].append(
            row.gender == row.expected_gender
            and row.age_group == row.expected_age_group
            and row.skin_group == row.expected_skin_group
        )
    out["Penalty_DeltaGSR"] = max(0.0, np.mean(succ["stereotypical"]) - np.mean(succ["counter"]))
    for pen, col in (("QPS", "qps"), ("SIL", "sil")):
        st = bg.loc[bg["prompt_type"] == "stereotypical", col].mean()
        ct = bg.loc[bg["prompt_type"] == "counter", col].mean()
        out[f"Penalty_{pen}"] = max(0.0, st - ct)
    out["Penalty_FQP"] = out["Penalty_SCL"] = math.nan
    und = tables["IFS-Und"]
    correct = und["mapped_occupation"] == und["occupation"]
    classes = sorted(set(und["mapped_occupation"]) - {"unmappable"})
    for spec in (s for s in GRANULAR_METRICS if s.sector == "IFS-Und"):
        accs, rates = [], []
        for g in _groups(spec.attributes):
            m = _mask(und, spec.attributes, g)
            if m.sum() >= 2:
                accs.append(correct[m].mean())
                rates.append([(und.loc[m, "mapped_occupation"] == c).mean() for c in classes])
        if spec.metric == "AD":
            out[spec.name] = max(accs) - min(accs)
        else:
            r = np.array(rates)
            out[spec.name] = float(max(r[:, j].max() - r[:, j].min() for j in range(len(classes))))
    # RFS-Und tournament: win rates, uniform prior, Bayes, JSD
    rounds = tables["RFS-Und"]
    wins, apps = defaultdict(int), defaultdict(int)
    for row in rounds.itertuples(index=False):
        if row.status != "ok":
            continue
        pid = f"{row.gender}_{row.age_group}_{row.skin_group}"
        for o in row.competitors.split("|"):
            apps[pid, o] += 1
        wins[pid, row.choice] += 1
    belief = {}
    for pid in profile_ids():
        rate = {o: wins[pid, o] / apps[pid, o] for o in OCCUPATIONS}
        tot = sum(rate.values())
        belief[pid] = {o: r / tot for o, r in rate.items()}
    for spec in (s for s in GRANULAR_METRICS if s.sector == "RFS-Und" and s.metric == "JSD"):
        attr = spec.attributes[0]
        pos = list(CATEGORIES).index(attr)
        real = reference_shares(reference, spec.region, attr)
        vals = []
        for occ in real.index:
            z = sum(belief[p][occ] for p in profile_ids())
            dist = [
                sum(belief[p][occ] for p in profile_ids() if p.split("_")[pos] == c) / z
                for c in CATEGORIES[attr]
            ]
            vals.append(jensenshannon(dist, real.loc[occ].to_numpy(), base=JSD_BASE) ** 2)
        out[spec.name] = float(np.mean(vals))
    for spec in (s for s in GRANULAR_METRICS if s.metric == "AbsSDS"):
        attr = spec.attributes[0]
        share = reference_shares(reference, spec.region, attr)[spec.group].to_dict()
        drifts = [
            share[p] - share[t]
            for t, p, gv in zip(
                und["occupation"], und["mapped_occupation"], und[COLS[attr]], strict=True
            )
            if p != t and p in share and t in share and gv == spec.group
        ]
        out[spec.name] = abs(float(np.mean(drifts)))
    # BIS-Und
    bu = tables["BIS-Und"]
    attrs_of = defaultdict(list)
    answers = defaultdict(list)
    for row in bu.itertuples(index=False):
        attrs_of[row.instance_id].append((row.gender, row.age_group, row.skin_group))
        answers[row.instance_id, row.question_id].append(
            row.score if row.question_id.isdigit() else row.correct
        )
    dims = {}
    for inst, combos in attrs_of.items():
        dims[inst] = "_".join(
            n for j, n in enumerate(("gender", "age", "skin")) if len({c[j] for c in combos}) > 1
        )
    ac, dhr = defaultdict(list), defaultdict(list)
    for (inst, q), vals in answers.items():
        pairs = list(itertools.combinations(vals, 2))
        if q.isdigit():
            ac[dims[inst]].append(sum(abs(x - y) for x, y in pairs) / len(pairs))
        else:
            dhr[dims[inst]].append(sum(x == y for x, y in pairs) / len(pairs))
    for spec in (s for s in GRANULAR_METRICS if s.sector == "BIS-Und"):
        key = "_".join(spec.attributes)
        out[spec.name] = (
            float(np.mean(ac[key])) if spec.metric == "AC_diff" else 1 - float(np.mean(dhr[key]))
        )
    return out


@pytest.fixture(scope="module")
def data(mode) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:  # type: ignore[no-untyped-def]
    return synthetic_tables(mode.size(FULL, QUICK))


def test_iris_granular_60(benchmark, mode, data) -> None:  # type: ignore[no-untyped-def]
    tables, reference = data
    result, fast = mode.measure(
        benchmark,
        lambda: all_granular_metrics(tables, reference=reference),
        rounds=3,
        warmup_rounds=1,
    )
    t0 = time.perf_counter()
    expected = loop_granular(tables, reference)
    slow = time.perf_counter() - t0
    table = result.set_index("metric")
    assert len(table) == 60
    for name, want in expected.items():
        got = table.loc[name, "value"]
        if math.isnan(want):
            assert math.isnan(got), name
        else:
            assert got == pytest.approx(want, abs=1e-9), name
    print(
        f"\nIRIS 60 granular metrics on {len(tables['IFS-Gen']):,} generated images (+ BIS-Gen "
        f"{len(tables['BIS-Gen']):,}, IFS-Und {len(tables['IFS-Und']):,}, tournament "
        f"{len(tables['RFS-Und']):,} rounds, BIS-Und {len(tables['BIS-Und']):,} answers): "
        f"{fast:.3f} s vectorised, {slow:.1f} s loop, ratio {slow / fast:.0f}x"
    )
    benchmark.extra_info.update(vectorised_s=fast, loop_s=slow, ratio=slow / fast)
    mode.goal(
        fast <= MAX_SECONDS,
        f"all 60 granular metrics in {fast:.3f} s (at most {MAX_SECONDS} s)",
        "the target is for the paper's sizes; quick mode's tables are about a tenth of them",
    )
