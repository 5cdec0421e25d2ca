#!/usr/bin/env bash
# The README's first command: from a fresh Debian 12 machine with a Rust toolchain, installs
# what building kinit needs (libvirt-dev, pkg-config, a C compiler; ci/deps.sh, only what is
# missing, `sudo` when not root), builds kinit and prints the plan of a cluster spec.
#
#   ci/quickstart.sh                                   # the plan of k8s-libvirt-1-1-1
#   ci/quickstart.sh --spec k8s-libvirt-3-2-2-h        # any `kinit plan` arguments
#
# The build is cargo's dev profile (the one the tests share); `cargo build --release` gives
# the binary for real deployments.
set -euo pipefail
cd "$(dirname "$0")/.."

ci/deps.sh build
if [ $# -eq 0 ]; then
  set -- --spec k8s-libvirt-1-1-1
fi
exec cargo run --quiet --locked -- plan "$@"
