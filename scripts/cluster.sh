#!/usr/bin/env bash
# A standalone Spark cluster on 127.0.0.1 from the pyspark package in .venv: one master and
# two workers (1 core, 1 GiB each), for tests and for trying Punctuated on a cluster.
#
#   scripts/cluster.sh start    # idempotent: starts what is not running, prints the master URL
#   scripts/cluster.sh status   # prints the master URL and each daemon's pid; exit 1 if one is down
#   scripts/cluster.sh stop     # idempotent: stops the daemons this script started (by pid file)
#
# Pid files and logs live under $PUNCTUATED_CLUSTER_DIR (default .venv/cluster); ports come
# from PUNCTUATED_MASTER_PORT (7077) and PUNCTUATED_MASTER_WEBUI_PORT (8080, workers use
# ephemeral ones). The pyspark package has no sbin/start-*.sh, so the daemons are started
# with bin/spark-class directly.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${PUNCTUATED_CLUSTER_DIR:-$root/.venv/cluster}"
port="${PUNCTUATED_MASTER_PORT:-7077}"
webui="${PUNCTUATED_MASTER_WEBUI_PORT:-8080}"
workers="${PUNCTUATED_WORKERS:-2}"
worker_memory="${PUNCTUATED_WORKER_MEMORY:-1g}"
url="spark://127.0.0.1:$port"
py="$root/.venv/bin/python"

spark_home() { "$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
names() { echo master; for i in $(seq 1 "$workers"); do echo "worker$i"; done; }

launch() {  # name, class, args...
  local name="$1"; shift
  local pidf="$dir/$name.pid"
  if alive "$pidf"; then return 0; fi
  SPARK_LOCAL_IP=127.0.0.1 SPARK_HOME="$home" SPARK_WORKER_DIR="$dir/work" \
    SPARK_DAEMON_MEMORY=256m nohup "$home/bin/spark-class" "$@" >"$dir/$name.log" 2>&1 &
  echo $! >"$pidf"
}

wait_for() {  # log file, pattern, seconds
  local i
  for i in $(seq 1 "$3"); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 1
  done
  echo "cluster.sh: timed out waiting for '$2' in $1" >&2
  tail -20 "$1" >&2 || true
  return 1
}

case "${1:-}" in
  start)
    mkdir -p "$dir/work"
    home="$(spark_home)"
    launch master org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$port" \
      --webui-port "$webui"
    wait_for "$dir/master.log" "Starting Spark master at\|I have been elected leader" 60
    for i in $(seq 1 "$workers"); do
      launch "worker$i" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --cores 1 \
        --memory "$worker_memory" --webui-port 0 "$url"
    done
    for i in $(seq 1 "$workers"); do
      wait_for "$dir/worker$i.log" "Successfully registered with master" 60
    done
    echo "$url"
    ;;
  stop)
    for name in $(names | tac); do
      pidf="$dir/$name.pid"
      if alive "$pidf"; then
        pid="$(cat "$pidf")"
        # spark-class execs java, so the pid is the daemon's; a worker's executors are its
        # children and end with it
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -9 "$pid" 2>/dev/null || true
      fi
      rm -f "$pidf"
    done
    echo "stopped"
    ;;
  status)
    down=0
    echo "$url"
    for name in $(names); do
      if alive "$dir/$name.pid"; then echo "$name running (pid $(cat "$dir/$name.pid"))"
      else echo "$name stopped"; down=1; fi
    done
    exit "$down"
    ;;
  *)
    echo "usage: scripts/cluster.sh start|stop|status" >&2; exit 2 ;;
esac
