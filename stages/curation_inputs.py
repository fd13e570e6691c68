"""DVC stage curation_inputs (always runs): a fingerprint of every file each curation config
reads, so editing one (even outside the repository) reruns the curation stage that reads it."""

from _common import run

from genfair.params import load_frame
from genfair.study.curation import curation_inputs

if __name__ == "__main__":
    run("curation_inputs", curation_inputs, load=load_frame)
