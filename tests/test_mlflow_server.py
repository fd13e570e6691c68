"""scripts/mlflow_server.sh: a team MLflow server on PostgreSQL with proxied artifacts,
started and stopped (its whole process group) by the recipe the docs give."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.mlflow_server import SCRIPT, team_mlflow_server
from tests.support.servers import PostgresServer


def test_the_server_stores_runs_in_postgres_and_proxies_artifacts(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    with team_mlflow_server(postgres, tmp_path) as server:
        pid = int((server.state / "server.pid").read_text())
        group = {
            int(p)
            for p in subprocess.run(
                ["pgrep", "-g", str(pid)], capture_output=True, text=True
            ).stdout.split()
        }
        assert pid in group and len(group) > 1  # the server and the workers it started
        mlflow.set_tracking_uri(server.uri)
        (tmp_path / "table.csv").write_text("a,b\n1,2\n")
        with mlflow.start_run() as run:
            mlflow.log_metric("m", 0.5)
            mlflow.log_artifact(str(tmp_path / "table.csv"))
        client = MlflowClient(server.uri)
        assert client.get_run(run.info.run_id).data.metrics == {"m": 0.5}
        assert run.info.artifact_uri.startswith(
            "mlflow-artifacts:"
        )  # proxied, no client-side storage
        assert [p.read_text() for p in server.artifacts.rglob("table.csv")] == ["a,b\n1,2\n"]
        # the runs live in PostgreSQL
        import psycopg

        database = server.backend.rsplit("/", 1)[1]
        with psycopg.connect(
            host=postgres.host,
            port=postgres.port,
            user=postgres.user,
            password=postgres.password,
            dbname=database,
        ) as conn:
            (count,) = conn.execute(
                "SELECT count(*) FROM runs WHERE run_uuid = %s", (run.info.run_id,)
            ).fetchone()
        assert count == 1
    alive = subprocess.run(["pgrep", "-g", str(pid)], capture_output=True, text=True).stdout.split()
    assert not alive, f"processes of the server's group left: {alive}"


def test_a_password_in_the_backend_url_is_refused(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "GENFAIR_MLFLOW_BACKEND": "postgresql+psycopg://u:secret@127.0.0.1:1/mlflow",
        "GENFAIR_MLFLOW_ARTIFACTS": str(tmp_path),
        "GENFAIR_MLFLOW_STATE": str(tmp_path / "state"),
    }
    done = subprocess.run(
        ["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2 and "PGPASSWORD" in done.stderr and "secret" not in done.stderr
    assert not (tmp_path / "state" / "server.pid").exists()
