#!/usr/bin/env bash
# The nightly end-to-end test of the libvirt provider, on a Debian 12 machine as root:
# installs what is missing (QEMU, libvirt, OpenSSH, debootstrap and image tools), starts
# libvirtd when none answers on qemu:///system (by its init script when there is no systemd,
# stopped again at the end), builds or reuses the Debian guest image (ci/e2e-image.sh), then
# runs the ignored tests `libvirt_e2e_*` (tests/integration/libvirt_e2e.rs) with KINIT_E2E=1:
# the hypervisor reached locally, then over SSH through a private sshd the test starts on
# 127.0.0.2 (nothing else of the machine's SSH setup is used or changed), then locally with
# OVN as the cluster network (-e kinit_ovn=true; it skips when Open vSwitch already runs, and
# stops the Open vSwitch and OVN daemons kinit started when it ends).
#
#   ci/e2e-libvirt.sh                 # about 10-20 minutes; the first image build adds 3-5
#   KINIT_E2E_CACHE=/var/cache/kinit-e2e ci/e2e-libvirt.sh   # keep the image elsewhere
#   KINIT_SKIP_INSTALL=1 ci/e2e-libvirt.sh                    # machine already prepared
#   ci/e2e-libvirt.sh libvirt_e2e_ssh                         # only the tests matching this
#
# KVM is used by libvirt when it works; without it kinit runs the guests under QEMU software
# emulation (the test passes -e kinit_hosted_deployment=true).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  echo "e2e-libvirt: run as root (libvirt's system daemon, debootstrap)" >&2
  exit 1
fi

# Only what is missing, never removing a package; QEMU and libvirt follow the installed QEMU
# (see ci/deps.sh). KINIT_SKIP_INSTALL=1 installs nothing.
ci/deps.sh e2e

# libvirtd: reuse a running one; otherwise start it (and virtlogd, which QEMU domains log
# through) and stop what was started when the script ends.
started=()
cleanup() {
  for d in "${started[@]}"; do
    if [ -x "/etc/init.d/$d" ]; then service "$d" stop || true; fi
  done
}
trap cleanup EXIT
if ! virsh -c qemu:///system version >/dev/null 2>&1; then
  if pidof systemd >/dev/null 2>&1 && [ "$(ps -o comm= -p 1)" = systemd ]; then
    systemctl start virtlogd libvirtd
  else
    for d in virtlogd libvirtd; do
      if ! service "$d" status >/dev/null 2>&1; then
        service "$d" start
        started=("$d" "${started[@]}")
      fi
    done
  fi
  for _ in $(seq 1 30); do
    virsh -c qemu:///system version >/dev/null 2>&1 && break
    sleep 1
  done
fi
virsh -c qemu:///system version

IMAGE="$(ci/e2e-image.sh | tail -1)"
echo "e2e-libvirt: guest image $IMAGE"

export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
KINIT_E2E=1 KINIT_E2E_IMAGE="$IMAGE" \
  cargo test --locked --test integration "${1:-libvirt_e2e}" -- --ignored --nocapture
