"""DVC stage metrics@<model>: the methodologies' metrics and scores for one model."""

import sys

from _common import run

from genfair.pipeline import compute_metrics

if __name__ == "__main__":
    run("metrics", compute_metrics, model=sys.argv[1])
