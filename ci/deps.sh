#!/usr/bin/env bash
# Installs the Debian packages a kinit build or test run needs, and nothing else: only what is
# missing, without recommends, and never removing or downgrading an installed package.
#
#   ci/deps.sh build        # what `cargo build` needs (the virt crate links libvirt)
#   ci/deps.sh test         # build + what ci/test.sh's tests start (sshd, libvirtd, OVN...)
#   ci/deps.sh e2e          # test + what ci/e2e-libvirt.sh and the UEFI boot tests need (OVMF, swtpm, debootstrap)
#   ci/deps.sh test --simulate   # only resolve (apt-get install -s); changes nothing
#
# QEMU follows what the machine already has. A Debian 12 image may ship qemu-utils from
# bookworm-backports (QEMU 10); bookworm's own qemu-system-x86 (7.2) would make apt remove
# it. So when an installed QEMU package is a backports build, QEMU and the libvirt that is
# built and tested against it (with SeaBIOS and brltty's libbrlapi, which QEMU 10 needs
# newer) come from backports too, pinned by source package. The backports source lives in a
# private apt directory (target/apt), so nothing under /etc/apt changes; on a plain Debian 12
# everything comes from the release the machine runs.
#
# Environment:
#   KINIT_SKIP_INSTALL=1    report what is missing, install nothing
#   KINIT_DPKG_ADMINDIR=D   read the installed set from D/status instead of /var/lib/dpkg
#                           (with --simulate: resolve against another machine's package set)
#   KINIT_APT_DIR=D         the private apt directory (default target/apt)
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: ci/deps.sh build|test|e2e [--simulate]" >&2; exit 2; }
[ $# -ge 1 ] || usage
set_name="$1"; shift
simulate=0
for a in "$@"; do
  case "$a" in
    --simulate) simulate=1 ;;
    *) usage ;;
  esac
done

BUILD=(gcc libc6-dev pkg-config libvirt-dev)
TEST=(
  openssh-server openssh-client   # real sshd test hosts
  sudo                            # become over SSH (test users get sudo rules)
  iproute2                        # network namespaces for per-host addresses
  libvirt-clients                 # virsh, virt-ssh-helper, virt-xml-validate (kinit plan --render checks); libvirt's test driver is in libvirt0
  genisoimage                     # seed and config ISOs (virt_config_iso; isoinfo reads them back)
  python3-venv                    # ansible-core and pywinrm for differential tests; pip module tests
  git                             # git module tests (local repositories)
  curl zip unzip xz-utils         # get_url/uri/unarchive module tests (HTTP client, archives)
  rpm gpg rsync bzip2             # rpm_key (a private rpm database), synchronize, archive module tests
  bind9-utils haproxy             # named-checkconf/haproxy -c check the service node's rendered configuration
  libxml2-utils chromium          # xmllint (JUnit schema, rendered answer files), headless page rendering
  libvirt-daemon-system qemu-system-x86 qemu-utils   # a real libvirtd for the cross-process resume test
  grub-pc-bin grub-efi-amd64-bin xorriso mtools   # the Windows domain booting a test ISO (grub-mkrescue) under TCG
  openvswitch-switch ovn-central ovn-host iptables iputils-ping   # real OVN for the OVN outside-access test
)
E2E=(ovmf swtpm swtpm-tools dnsmasq-base debootstrap e2fsprogs fdisk)

case "$set_name" in
  build) WANT=("${BUILD[@]}") ;;
  test) WANT=("${BUILD[@]}" "${TEST[@]}") ;;
  e2e) WANT=("${BUILD[@]}" "${TEST[@]}" "${E2E[@]}") ;;
  *) usage ;;
esac

ADMINDIR="${KINIT_DPKG_ADMINDIR:-/var/lib/dpkg}"
installed_version() {
  # Prints the version when the package is fully installed ("ii"), else nothing.
  dpkg-query --admindir="$ADMINDIR" -W -f '${db:Status-Abbrev}|${Version}\n' "$1" 2>/dev/null \
    | awk -F'|' '$1 ~ /^ii/ {print $2; exit}'
}

missing=()
for p in "${WANT[@]}"; do
  [ -n "$(installed_version "$p")" ] || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "deps: every package of \`$set_name\` is installed"
  exit 0
fi
echo "deps: missing for \`$set_name\`: ${missing[*]}"
if [ "${KINIT_SKIP_INSTALL:-0}" = 1 ] && [ "$simulate" = 0 ]; then
  echo "deps: KINIT_SKIP_INSTALL=1, installing nothing (tests that need them will fail or say why)"
  exit 0
fi

# shellcheck disable=SC1091
codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
if [ -z "$codename" ] || ! command -v apt-get >/dev/null; then
  echo "deps: this is not a Debian-family machine with apt; install by hand: ${missing[*]}" >&2
  exit 1
fi

backports=0
for p in qemu-utils qemu-system-x86 qemu-system-common qemu-block-extra; do
  case "$(installed_version "$p")" in *~bpo*) backports=1 ;; esac
done

APT_DIR="${KINIT_APT_DIR:-$PWD/target/apt}"
mkdir -p "$APT_DIR/sources.list.d" "$APT_DIR/preferences.d" "$APT_DIR/lists/partial"
rm -f "$APT_DIR"/sources.list.d/* "$APT_DIR"/preferences.d/*
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  if [ -f "$f" ]; then cp "$f" "$APT_DIR/sources.list.d/"; fi
done
APT_OPTS=(
  -o "Dir::Etc::SourceParts=$APT_DIR/sources.list.d"
  -o "Dir::Etc::PreferencesParts=$APT_DIR/preferences.d"
  -o "Dir::State::Lists=$APT_DIR/lists"
)
if [ "$ADMINDIR" != /var/lib/dpkg ]; then
  [ "$simulate" = 1 ] || { echo "deps: KINIT_DPKG_ADMINDIR only works with --simulate" >&2; exit 2; }
  APT_OPTS+=(-o "Dir::State::status=$ADMINDIR/status")
fi

if [ "$backports" = 1 ]; then
  # The mirror the machine already uses for its release, in either sources format.
  mirror="$( { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true; } \
    | awk -v s="$codename" '$1 == "deb" { for (i = 2; i < NF; i++) if ($i !~ /^\[/ && $(i+1) == s) { print $i; exit } }')"
  if [ -z "$mirror" ]; then
    mirror="$( { cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } | awk -v s="$codename" '
      /^URIs:/ { u = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) found = u }
      /^$/ { if (found) { print found; exit } u = "" }
      END { if (found) print found }' | head -1)"
  fi
  mirror="${mirror:-http://deb.debian.org/debian}"
  echo "deps: installed QEMU is from $codename-backports; QEMU and libvirt come from $codename-backports ($mirror)"
  cat >"$APT_DIR/sources.list.d/kinit-backports.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $codename-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat >"$APT_DIR/preferences.d/kinit-qemu.pref" <<EOF
Package: src:qemu src:seabios src:libvirt src:brltty
Pin: release n=$codename-backports
Pin-Priority: 990
EOF
fi

SUDO=""
[ "$(id -u)" = 0 ] || [ "$simulate" = 1 ] || SUDO="sudo"
log="$APT_DIR/apt.log"
run_apt() {
  # apt's own output stays visible; on failure its reason is repeated at the end.
  local rc
  set +e
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" "$@" 2>&1 | tee "$log"
  rc="${PIPESTATUS[0]}"
  set -e
  if [ "$rc" != 0 ]; then
    echo "deps: \`apt-get $*\` failed (exit $rc); apt said:" >&2
    grep -E '^(E|W):|Depends:|Breaks:|Conflicts:|held broken|unmet dependencies|dpkg: error' "$log" >&2 || tail -20 "$log" >&2
    return "$rc"
  fi
}

echo "deps: apt-get update (private lists in $APT_DIR)"
run_apt -q update >/dev/null

# Only the missing packages are named, so an installed one is never upgraded or downgraded
# for its own sake; --no-remove makes apt refuse a solution that removes anything.
install_args=(install -q -y --no-install-recommends --no-remove)
if [ "$simulate" = 1 ]; then
  run_apt "${install_args[@]}" -s "${missing[@]}" >/dev/null
  if grep -qE '^Remv ' "$log"; then
    echo "deps: the install would remove: $(grep -E '^Remv ' "$log" | cut -d' ' -f2 | tr '\n' ' ')" >&2
    exit 1
  fi
  echo "deps: simulation resolved: $(grep -cE '^Inst ' "$log") package(s) to install or upgrade, none removed"
  grep -E '^Inst ' "$log" | sed 's/^/deps:   /'
  exit 0
fi

# The packages are installed for the tests, which start the daemons they need themselves (an
# OVN test refuses to touch an Open vSwitch that already runs). Without systemd, maintainer
# scripts start daemons through invoke-rc.d, which first asks /usr/sbin/policy-rc.d
# (invoke-rc.d(8); exit 101: action forbidden). Container images ship one; on a machine
# without it, one is in place for this install only.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# ci/deps.sh: no daemon starts while it installs test packages\nexit 101\n' \
    | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 0755 "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi

if ! run_apt "${install_args[@]}" "${missing[@]}"; then
  # A failure after dpkg started leaves packages unpacked but not configured: finish them
  # (or report why not) so the package database is consistent again.
  if $SUDO dpkg --audit 2>/dev/null | grep -q .; then
    echo "deps: finishing half-configured packages (dpkg --configure -a)" >&2
    $SUDO env DEBIAN_FRONTEND=noninteractive dpkg --configure -a || true
  fi
  exit 1
fi
echo "deps: installed ${missing[*]}"
