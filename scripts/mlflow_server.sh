#!/usr/bin/env bash
# A team MLflow tracking server: runs and metrics in PostgreSQL, artifacts proxied by the server
# (clients need only MLFLOW_TRACKING_URI=http://HOST:PORT, no storage credentials).
#
#   scripts/mlflow_server.sh start   start it in its own process group, wait until /health answers
#   scripts/mlflow_server.sh stop    stop it: the whole process group (the server starts workers)
#
# Settings (environment):
#   GENFAIR_MLFLOW_BACKEND     backend store, e.g. postgresql+psycopg://mlflow@db.example.org:5432/mlflow
#                              (no password in it: libpq reads PGPASSWORD or ~/.pgpass)
#   GENFAIR_MLFLOW_ARTIFACTS   where the server keeps artifacts: a folder, or s3://bucket/prefix
#                              (then AWS_* variables, and MLFLOW_S3_ENDPOINT_URL for S3-compatible stores)
#   GENFAIR_MLFLOW_HOST        interface to listen on (default 127.0.0.1; a deployment puts a proxy
#                              with TLS in front, or the machine's own address behind a firewall)
#   GENFAIR_MLFLOW_PORT        port (default 5000)
#   GENFAIR_MLFLOW_WORKERS     server worker processes (default 2)
#   GENFAIR_MLFLOW_STATE       folder for the pid and log files (default .genfair/mlflow-server)
#   GENFAIR_MLFLOW_APP         optional MLflow app, e.g. basic-auth (docs/scale-out.md)
set -euo pipefail

backend=${GENFAIR_MLFLOW_BACKEND:-}
artifacts=${GENFAIR_MLFLOW_ARTIFACTS:-}
host=${GENFAIR_MLFLOW_HOST:-127.0.0.1}
port=${GENFAIR_MLFLOW_PORT:-5000}
workers=${GENFAIR_MLFLOW_WORKERS:-2}
state=${GENFAIR_MLFLOW_STATE:-.genfair/mlflow-server}
pidfile=$state/server.pid

running() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case ${1:-} in
start)
  [[ -n $backend ]] || { echo "set GENFAIR_MLFLOW_BACKEND (e.g. postgresql+psycopg://mlflow@127.0.0.1:5432/mlflow)" >&2; exit 2; }
  [[ -n $artifacts ]] || { echo "set GENFAIR_MLFLOW_ARTIFACTS (a folder, or s3://bucket/prefix)" >&2; exit 2; }
  if [[ $backend =~ ://[^/@]*:[^/@]*@ ]]; then
    echo "GENFAIR_MLFLOW_BACKEND holds a password: remove it and set PGPASSWORD or a ~/.pgpass line" >&2; exit 2
  fi
  if running; then echo "already running (pid $(cat "$pidfile"))"; exit 0; fi
  mkdir -p "$state"
  app=()
  [[ -n ${GENFAIR_MLFLOW_APP:-} ]] && app=(--app-name "$GENFAIR_MLFLOW_APP")
  # setsid: its own process group, so that `stop` ends the workers too
  setsid mlflow server --backend-store-uri "$backend" --artifacts-destination "$artifacts" \
    --serve-artifacts --host "$host" --port "$port" --workers "$workers" "${app[@]}" \
    >"$state/server.log" 2>&1 < /dev/null &
  echo $! >"$pidfile"
  deadline=$((SECONDS + 120))  # it creates or migrates its tables first
  while ((SECONDS < deadline)); do
    if python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" "http://$host:$port/health" 2>/dev/null; then
      echo "MLflow server on http://$host:$port (pid $(cat "$pidfile"), log $state/server.log)"; exit 0
    fi
    running || { echo "MLflow server exited; its log ($state/server.log):" >&2; tail -20 "$state/server.log" >&2; rm -f "$pidfile"; exit 1; }
    sleep 0.2
  done
  echo "MLflow server did not answer http://$host:$port/health in 120 s; see $state/server.log" >&2; exit 1
  ;;
stop)
  if running; then
    pid=$(cat "$pidfile")
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    echo "MLflow server stopped (process group $pid)"
  fi
  rm -f "$pidfile"
  ;;
*)
  echo "usage: $0 start|stop (settings: see the top of this file)" >&2; exit 2 ;;
esac
