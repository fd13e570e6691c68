"""DVC stage metrics@<model>-<methodology>: the model's scores on the methodology."""

import sys

from _common import run

from genfair.study.steps import compute_metrics

if __name__ == "__main__":
    run("metrics", compute_metrics, model=sys.argv[1], methodology=sys.argv[2])
