"""DVC stage generate@<model>-<methodology>: the model's answers (or images), cached."""

import sys

from _common import run

from genfair.study.steps import generate

if __name__ == "__main__":
    run("generate", generate, model=sys.argv[1], methodology=sys.argv[2])
