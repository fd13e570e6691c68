"""DVC stage track: MLflow, one parent run per study run and a child run per model and
methodology."""

from _common import run

from genfair.study.tracking import track_study

if __name__ == "__main__":
    run("track", track_study)
