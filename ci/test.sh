#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what the tests need (system
# packages, a Python venv with ansible-core and pywinrm), then runs every test.
#
#   ci/test.sh            # install (when missing) + fmt + clippy + all tests
#   KINIT_SKIP_INSTALL=1 ci/test.sh   # skip the package step on a prepared machine
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  openssh-server openssh-client   # real sshd test hosts
  sudo                            # become over SSH (test users get sudo rules)
  iproute2                        # network namespaces for per-host addresses
  libvirt-dev libvirt-clients pkg-config   # the virt crate and libvirt's test driver
  genisoimage                     # seed and config ISOs (virt_config_iso; isoinfo reads them back)
  python3-venv                    # ansible-core and pywinrm for differential tests
  curl zip unzip xz-utils         # get_url/uri/unarchive module tests (HTTP client, archives)
  bind9-utils haproxy             # named-checkconf/haproxy -c check the service node's rendered configuration
  libxml2-utils chromium          # kinit ci tests: xmllint --schema on JUnit, headless page rendering
  libvirt-daemon-system qemu-system-x86 qemu-utils   # a real libvirtd for the cross-process resume test
  openvswitch-switch ovn-central ovn-host iptables iputils-ping   # real OVN for the OVN outside-access test
)

need_install=0
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need_install=1
done
if [ "${KINIT_SKIP_INSTALL:-0}" != 1 ] && [ "$need_install" = 1 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${APT_PACKAGES[@]}"
fi

# A real libvirtd for tests/integration/libvirt/resume_real.rs. No systemd on CI: start the
# daemons by hand when none answers (the test prints why it skipped if this did not work).
# By absolute path: Debian's init script only counts a daemon whose command line starts with
# /usr/sbin/libvirtd as running, and would start a second one that breaks the first's socket.
if ! timeout 10 virsh -c qemu:///system version >/dev/null 2>&1 \
   && [ "$(id -u)" = 0 ] && command -v libvirtd >/dev/null; then
  /usr/sbin/virtlogd -d || true
  /usr/sbin/libvirtd -d || true
  sleep 2
fi

# Python tools live in a venv under target/ so nothing outside the checkout changes.
VENV="${KINIT_VENV:-$PWD/target/venv}"
if [ ! -x "$VENV/bin/ansible-playbook" ] || [ ! -x "$VENV/bin/python" ] \
   || ! "$VENV/bin/python" -c 'import winrm, spnego' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r ci/requirements.txt
fi
export KINIT_VENV="$VENV"
export PATH="$VENV/bin:$PATH"

cargo fmt --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --locked "$@"
