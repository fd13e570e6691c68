"""DVC stage label@<model>: instruments turn responses into labels."""

import sys

from _common import run

from genfair.pipeline import label

if __name__ == "__main__":
    run("label", label, model=sys.argv[1])
