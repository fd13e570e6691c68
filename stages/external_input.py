"""DVC stage external_input@<section>-<name>: the fingerprint of one curation input outside the
repository, which dvc.yaml lists as the stage's dependency (so `dvc status` names it)."""

import sys

from _common import run

from genfair.frame import load_frame
from genfair.study.curation_stages import external_input

if __name__ == "__main__":
    run("external_input", external_input, item=sys.argv[1], load=load_frame)
