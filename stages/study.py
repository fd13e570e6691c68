"""DVC stage study@<methodology>: the methodology's study-level step over every model."""

import sys

from _common import run

from genfair.study.steps import study_step

if __name__ == "__main__":
    run("study", study_step, methodology=sys.argv[1])
