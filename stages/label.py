"""DVC stage label@<model>-<methodology>: instrument outputs per response."""

import sys

from _common import run

from genfair.study.steps import label

if __name__ == "__main__":
    run("label", label, model=sys.argv[1], methodology=sys.argv[2])
