"""IRIS's ``formulas: paper | authors_code`` presets and its JSD log base (``jsd_base``).

Where the paper's text and the authors' released code (Warren118/IRIS-Benchmark at 0d2baca)
read a quantity differently, each reading is a setting of ``methodologies.iris.metrics`` or
``methodologies.iris.scoring``; a preset fills the ones the config does not set explicitly
(docs/methodology.md, IRIS, "The paper, the authors' code and genfair"):

- ``metrics.spd_unmappable``: SPD's unmappable answers in the denominator only (paper) or
  as a predicted class (``metrics/calculations.py``, ``calculate_spd``);
- ``metrics.spd_min_group_size``: SPD keeps groups of one in the authors' code;
- ``metrics.abs_sds_deviation``: |SDS| divided by its maximum 1 (§A.2.3) or log1p
  (``evaluate.py``, ``normalize_deviation_space``);
- ``scoring.alpha_items``: Cronbach's alpha on the deviations or on raw values without
  constant columns (``validation/internal_consistency.py``);
- ``scoring.overall``: genfair's calibrated S_tot with K_tot, or ``evaluate.py``'s 50000 / 5
  with missing sectors as 0 (which does not reproduce Table 3).

``jsd_base`` (e, the default, or 2) is not part of a preset: the published S and K were
fitted on the authors' natural-log JSDs under either reading. It is copied into
``metrics.jsd_base`` (the JSDs) and ``scoring.jsd_base`` (RFS-Und's default S).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["FORMULA_PRESETS", "apply_presets"]

FORMULA_PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "paper": {
        "metrics": {
            "spd_unmappable": "denominator",
            "spd_min_group_size": None,
            "abs_sds_deviation": "linear",
        },
        "scoring": {"overall": "calibrated", "alpha_items": "deviation"},
    },
    "authors_code": {
        "metrics": {
            "spd_unmappable": "class",
            "spd_min_group_size": 1,
            "abs_sds_deviation": "log1p",
        },
        "scoring": {"overall": "authors_code", "alpha_items": "raw_nonconstant"},
    },
}


def _explicit(block: Any, key: str) -> dict[str, Any]:
    """The keys a nested block sets explicitly, as a dict."""
    if block is None:
        return {}
    if isinstance(block, BaseModel):
        return block.model_dump(exclude_unset=True)
    if not isinstance(block, dict):
        raise ValueError(f"methodologies.iris.{key} must be a mapping; got {block!r}")
    return dict(block)


def apply_presets(data: Any) -> Any:
    """``methodologies.iris`` with the ``formulas`` preset and ``jsd_base`` filled into its
    ``metrics`` and ``scoring`` blocks (a setting given explicitly wins over the preset)."""
    if not isinstance(data, dict):
        return data
    preset = data.get("formulas", "paper")
    if not isinstance(preset, str) or preset not in FORMULA_PRESETS:  # a list is unhashable
        raise ValueError(
            f"methodologies.iris.formulas must be one of {sorted(FORMULA_PRESETS)}; got {preset!r}"
        )
    base = str(data.get("jsd_base", "e"))
    out = {**data, "jsd_base": base}  # YAML reads 2 as a number
    for key, defaults in FORMULA_PRESETS[preset].items():
        block = _explicit(data.get(key), key)
        if "jsd_base" in block and str(block["jsd_base"]) != base:
            raise ValueError(
                f"methodologies.iris.{key}.jsd_base is set by methodologies.iris.jsd_base "
                f"({base!r}); set it there, not in {key}"
            )
        out[key] = {**defaults, **block, "jsd_base": base}
    return out
