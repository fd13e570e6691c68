"""A stage's start-up pays only for what it uses. Every stage validates ``params.yaml`` (each
methodology's config, so each methodology's package is imported) and imports the study
steps; a library that only some steps need (scipy.stats alone took about 1 s) is imported
where it is used, so a smoke study of ~50 stages does not pay for it ~50 times."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.conf import ROOT

#: libraries that take 0.1-2 s to import and that only some steps use
HEAVY = ("scipy.stats", "scipy.optimize", "textblob", "trafilatura", "gensim", "mlflow", "torch",
         "transformers", "sentence_transformers", "matplotlib", "sklearn",
         "sqlalchemy", "scipy", "skimage", "httpx")  # fmt: skip

PROBE = """
import sys
from genfair.study_params import load_params
load_params()
import genfair.study.steps
print(" ".join(m for m in sys.argv[1:] if m in sys.modules))
"""


def test_validating_params_and_importing_the_steps_load_no_heavy_library() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}  # this checkout's code
    done = subprocess.run([sys.executable, "-c", PROBE, *HEAVY], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert done.stdout.split() == [], f"imported at a stage's start: {done.stdout}"
