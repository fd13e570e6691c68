"""DVC stage label@<model>-<methodology>: instrument outputs per response."""

import sys

from _common import run

from genfair.study.steps import label, recorded_params

if __name__ == "__main__":
    model, methodology = sys.argv[1], sys.argv[2]
    # the params generate@ ran with (it depends on every param the run reads)
    run(
        "label",
        label,
        model=model,
        methodology=methodology,
        load=lambda: recorded_params(model, methodology),
    )
