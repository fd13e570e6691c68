"""DVC stage metrics@<model>-<methodology>: the model's scores on the methodology."""

import sys

from _common import run

from genfair.study.steps import compute_metrics, recorded_params

if __name__ == "__main__":
    model, methodology = sys.argv[1], sys.argv[2]
    # the params generate@ ran with (it depends on every param the run reads)
    run(
        "metrics",
        compute_metrics,
        model=model,
        methodology=methodology,
        load=lambda: recorded_params(model, methodology),
    )
