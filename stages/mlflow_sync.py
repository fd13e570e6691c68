"""DVC stage mlflow_sync (always runs): the configured MLflow store holds every run `track` listed,
or gets the ones it lacks."""

from _common import run

from genfair.params import load_frame
from genfair.study.store import sync_store

if __name__ == "__main__":
    run("mlflow_sync", sync_store, load=load_frame)
