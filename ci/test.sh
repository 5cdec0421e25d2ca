#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what the tests need (system
# packages through ci/deps.sh, a Python venv with ansible-core and pywinrm), starts a libvirtd
# for the tests that need a real one (and stops it again), then runs fmt, clippy and every
# test with KINIT_REQUIRE_ALL=1, so a test that cannot run here fails instead of skipping.
#
#   ci/test.sh                        # install (what is missing) + fmt + clippy + all tests
#   ci/test.sh regression::           # the same, only tests matching a filter
#   KINIT_SKIP_INSTALL=1 ci/test.sh   # install nothing; tests whose tools are missing fail
#   KINIT_REQUIRE_ALL=0 ci/test.sh    # tests that cannot run here say why and pass
set -euo pipefail
cd "$(dirname "$0")/.."

# The README's first command, as written, on the same machine: proves it works by itself.
ci/quickstart.sh
ci/deps.sh test

# A real libvirtd for the tests that need one (tests/integration/libvirt/resume_real.rs,
# ssh/forward.rs, cluster_roles/libvirt_ssh.rs). No systemd on CI: the daemons are started by
# hand when none answers, with pid files under target/, and stopped when the script ends.
# By absolute path: Debian's init script only counts a daemon whose command line starts with
# /usr/sbin/libvirtd as running, and would start a second one that breaks the first's socket.
RUN_DIR="$PWD/target/ci-daemons"
started=()
stop_daemons() {
  local d pid
  for d in "${started[@]}"; do
    pid="$(cat "$RUN_DIR/$d.pid" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      echo "test.sh: stopped $d (pid $pid)"
    fi
    rm -f "$RUN_DIR/$d.pid"
  done
}
trap stop_daemons EXIT
if [ "$(id -u)" = 0 ] && [ -x /usr/sbin/libvirtd ] \
   && ! timeout 10 virsh -c qemu:///system version >/dev/null 2>&1; then
  mkdir -p "$RUN_DIR"
  for d in virtlogd libvirtd; do
    if ! pidof "$d" >/dev/null 2>&1; then
      "/usr/sbin/$d" -d -p "$RUN_DIR/$d.pid"
      started+=("$d")
    fi
  done
  for _ in $(seq 1 30); do
    timeout 10 virsh -c qemu:///system version >/dev/null 2>&1 && break
    sleep 1
  done
fi

# Python tools live in a venv under target/ so nothing outside the checkout changes.
VENV="${KINIT_VENV:-$PWD/target/venv}"
if [ ! -x "$VENV/bin/ansible-playbook" ] || [ ! -x "$VENV/bin/python" ] \
   || ! "$VENV/bin/python" -c 'import winrm, spnego, kubernetes_validate, tree_sitter_pwsh, passlib' 2>/dev/null \
   || ! "$VENV/bin/python" -c 'import ansible_collections.community.general' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r ci/requirements.txt
fi
export KINIT_VENV="$VENV"
export PATH="$VENV/bin:$PATH"
# Everything the tests need was installed above: a test that still cannot run fails.
export KINIT_REQUIRE_ALL="${KINIT_REQUIRE_ALL:-1}"

cargo fmt --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --locked "$@"
