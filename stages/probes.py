"""DVC stage probes@<methodology>: build the methodology's probe table."""

import sys

from _common import run

from genfair.pipeline import make_probes

if __name__ == "__main__":
    run("probes", make_probes, methodology=sys.argv[1])
