"""DVC stage mlflow_sync (always runs): the configured MLflow store holds every run `track` listed,
or gets the ones it lacks. Unchanged params.yaml: the last run's store, without validating it
again."""

from genfair.study.always import STORE_STAGE, quick, quick_sync_store

if __name__ == "__main__" and not quick(STORE_STAGE, quick_sync_store):
    from functools import partial

    from _common import run

    from genfair.frame import load_frame
    from genfair.study.always import sync_store

    run(STORE_STAGE, partial(sync_store, stamp=True), load=load_frame)
