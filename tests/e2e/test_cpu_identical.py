"""Identical on every CPU: the smoke study with numpy's and torch's widest kernels on this
machine, and again with them capped to the x86-64 baseline, gives the same bytes in every
output (floats are written at ``genfair.io.FLOAT_DIGITS`` significant digits; the report's
provenance line, which names each checkout's commit and render time, is left out). The two runs
share the response cache, as a team does: a local model's own numerics may still flip a
token on another CPU, and the shared cache is what makes the study identical there
(docs/scale-out.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from genfair.io import file_sha256
from tests.support.project import copy_study, run, study_env
from tests.support.studies import SHARED, check_declared, shared_study

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.builds("smoke", "capped"),
]

#: numpy's dispatch down to its x86-64-v2 baseline, torch's ATen to its default kernels, the
#: BLAS libraries to an SSE-only core
CAPPED = {
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    "ATEN_CPU_CAPABILITY": "default",
    "OPENBLAS_CORETYPE": "Nehalem",
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
}
#: outputs allowed to differ: none. (The news LDA's perplexity did, by ~2e-7 relative, while
#: gensim ran in float32, whose exp/log kernels numpy picks by CPU; it runs in float64 now.)
KNOWN: list[str] = []
#: the SIMD targets numpy dispatches to on this CPU, and torch's kernel level
PROBE = (
    "import torch; from numpy._core._multiarray_umath import "
    "__cpu_features__ as f, __cpu_dispatch__ as d;"
    "print([k for k in d if f.get(k)], torch.backends.cpu.get_cpu_capability())"
)


#: the report's provenance beside the page (study/report.py, not a DVC output): each checkout
#: here has its own git commit, and the two render a minute apart; neither is a CPU's doing
BUILD = "build.js"


def _outputs(work: Path) -> dict[str, str]:
    return {
        str(p.relative_to(work)): file_sha256(p)
        for p in sorted((work / "data").rglob("*"))
        if p.is_file() and p.name not in (".gitignore", BUILD) and "reference" not in p.parts
    }


def test_the_smoke_study_is_the_same_bytes_with_capped_cpu_kernels(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    wide = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    ).stdout
    capped = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        env={**study_env(tmp_path), **CAPPED},
    ).stdout
    assert capped.strip() == "[] DEFAULT", capped  # the caps take effect
    # the widest kernels: the shared smoke study; capped: the same study built anew, on a copy
    # of its response cache (answers and images), as a teammate on another CPU shares the
    # team's; the instruments' own caches (embeddings) are not copied: computed again, capped
    smoke = shared_study(request, "smoke")
    check_declared(request.node, "capped")
    work = tmp_path / "capped"
    work.mkdir()
    (tmp_path / "cache").mkdir()
    for database in (smoke.work / ".genfair-cache").glob("responses.sqlite*"):  # with its WAL
        shutil.copy2(database, tmp_path / "cache")
    shutil.copytree(smoke.work / ".genfair-cache/images", tmp_path / "cache/images")
    env = study_env(work, GENFAIR_CACHE_DIR=str(tmp_path / "cache"), **CAPPED)
    copy_study(work, env, *SHARED["smoke"])
    run(["dvc", "repro"], work, env)
    outputs = {"wide": _outputs(smoke.work), "capped": _outputs(work)}
    assert outputs["wide"].keys() == outputs["capped"].keys()
    differ = sorted(
        path for path, digest in outputs["wide"].items() if outputs["capped"][path] != digest
    )
    total = len(outputs["wide"])
    assert differ == KNOWN, (
        f"kernels {wide.strip()} vs capped: {len(differ)} of {total} outputs differ: {differ}"
    )
