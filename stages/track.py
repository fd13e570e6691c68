"""DVC stage track: one MLflow parent run per study, one child run per model and methodology."""

from _common import run

from genfair.tracking import track_study

if __name__ == "__main__":
    run("track", track_study)
