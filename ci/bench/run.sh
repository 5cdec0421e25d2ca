#!/bin/sh
# Side-by-side benchmark: kinit (release) vs ansible-playbook (default, pipelining) vs pyinfra.
# Needs root (creates the `kbench` user, runs its own sshd on 127.0.0.1..N:22022).
#
#   ci/bench/run.sh                 # full grid (kinit everywhere, ansible on a subset)
#   ci/bench/run.sh --quick         # N=1,5 x M=20, cmd only, 2 reps
#   ci/bench/run.sh --rtt 40        # adds a 40 ms round trip (delay proxy), N=1, M=20,100, cmd
#   extra arguments go to bench.py (--hosts, --tasks, --workloads, --runners, --reps, ...)
set -eu
cd "$(dirname "$0")/../.."
command -v /usr/bin/time >/dev/null || apt-get install -y time
VENV=target/benchvenv
if [ ! -x "$VENV/bin/pyinfra" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q -r ci/bench/requirements.txt
fi
CARGO_INCREMENTAL=0 cargo build --release --quiet
WORK=$(pwd)/target/bench
mkdir -p "$WORK"
set -- --kinit "$(pwd)/target/release/kinit" --venv "$(pwd)/$VENV" --work "$WORK" "$@"
case " $* " in
*" --quick "*)
    set -- $(printf '%s\n' "$@" | grep -v '^--quick$') --hosts 1,5 --tasks 20 --workloads cmd --reps 2 ;;
esac
case " $* " in
*" --rtt "*)
    # --rtt MS: kinit only unless --runners says otherwise.
    ARGS=""; NEXT=""
    for a in "$@"; do
        if [ "$NEXT" = 1 ]; then ARGS="$ARGS --rtt-ms $a"; NEXT=""; continue; fi
        if [ "$a" = "--rtt" ]; then NEXT=1; continue; fi
        ARGS="$ARGS $a"
    done
    # shellcheck disable=SC2086
    set -- $ARGS --hosts 1 --tasks 20,100 --workloads cmd ;;
esac
exec python3 ci/bench/bench.py "$@"
