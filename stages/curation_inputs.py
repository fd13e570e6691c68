"""DVC stage curation_inputs (always runs): a fingerprint of every file each curation config
reads, so editing one (even outside the repository) reruns the curation stage that reads it.
Unchanged params.yaml: the last run's input lists, without validating it again."""

from genfair.study.always import CURATION_STAGE, quick, quick_curation_inputs

if __name__ == "__main__" and not quick(CURATION_STAGE, quick_curation_inputs):
    from functools import partial

    from _common import run

    from genfair.frame import load_frame
    from genfair.study.curation_stages import curation_inputs

    run(CURATION_STAGE, partial(curation_inputs, stamp=True), load=load_frame)
