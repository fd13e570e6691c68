"""DVC stage code@<methodology>: a content fingerprint of the methodology's code, which the
cross-model stages (score, track, report) depend on."""

import sys

from _common import run

from genfair.frame import load_frame
from genfair.study.code import write_code_fingerprint

if __name__ == "__main__":
    run("code", write_code_fingerprint, methodology=sys.argv[1], load=load_frame)
