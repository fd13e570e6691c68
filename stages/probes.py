"""DVC stage probes@<methodology>: the methodology's probe table."""

import sys

from _common import run

from genfair.study.steps import make_probes

if __name__ == "__main__":
    run("probes", make_probes, methodology=sys.argv[1])
