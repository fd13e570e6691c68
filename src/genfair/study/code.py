"""``code@<methodology>``: a content fingerprint of one methodology's code.

The cross-model stages (``score``, ``track``, ``report``) run the code of every methodology in
the study, wherever it lives (its folder in the tree or an installed package's,
``params.yaml``'s ``methodology_code``). A DVC stage cannot list a variable number of
dependencies, so each methodology's ``code@`` stage depends on its own code and writes its
fingerprint to ``data/code/<methodology>.json``; the cross-model stages depend on
``data/code``. Editing one methodology's code thus reruns its own stages and the cross-model
ones, and nothing of another methodology.
"""

from __future__ import annotations

from pathlib import Path

from genfair.curation.inputs import inputs_fingerprint
from genfair.errors import ConfigError
from genfair.frame import StudyFrame
from genfair.io import write_json
from genfair.study.layout import Layout

__all__ = ["write_code_fingerprint"]


def write_code_fingerprint(params: StudyFrame, methodology: str, layout: Layout = Layout()) -> Path:
    """``data/code/<methodology>.json``: file count, bytes and sha256 over the relative paths
    and contents of the methodology's code (byte-code caches left out). Paths are not
    recorded, so the fingerprint is the same wherever the package is installed."""
    where = params.methodology_code or {}
    if methodology not in where:
        raise ConfigError(
            f"params.yaml: methodology_code has no entry {methodology!r}: recompose it with "
            "`genfair compose` (or `make compose`)"
        )
    # None: registered in code, nothing on disk to watch
    described = inputs_fingerprint(
        [Path(where[methodology])] if where[methodology] else [], layout.root
    )["inputs"]
    code = [{k: v for k, v in entry.items() if k != "path"} for entry in described]
    return write_json({"methodology": methodology, "code": code}, layout.code(methodology))
