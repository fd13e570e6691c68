"""DVC stage generate@<model>: ask the model every probe of its modality (cached)."""

import sys

from _common import run

from genfair.pipeline import generate

if __name__ == "__main__":
    run("generate", generate, model=sys.argv[1])
