"""DVC stage plot@<methodology>-<plot>: one `dvc plots` table the methodology declares."""

import sys

from _common import run

from genfair.study.scoring import write_plot

if __name__ == "__main__":
    run(
        "plot",
        lambda _params, methodology: write_plot(methodology, sys.argv[2]),
        methodology=sys.argv[1],
        load=lambda: None,
    )
