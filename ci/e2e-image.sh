#!/usr/bin/env bash
# Builds (or reuses) the small Debian 12 "cloud image" the libvirt end-to-end test boots:
# a debootstrapped rootfs with cloud-init, ifupdown and OpenSSH, on a BIOS-bootable disk
# (MBR, one ext4 partition, GRUB installed without loop devices or mounts), as qcow2.
#
#   ci/e2e-image.sh [CACHE_DIR]     # prints the image path on its last line
#
# CACHE_DIR defaults to $KINIT_E2E_CACHE, then target/e2e-cache. A finished image is reused
# as is; delete it to rebuild. The debootstrap (about 3-5 minutes) is the slow part; its
# rootfs is kept too, so a rebuild of the disk alone takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${1:-${KINIT_E2E_CACHE:-$PWD/target/e2e-cache}}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
IMAGE="$CACHE/debian-12-kinit-e2e.qcow2"
ROOTFS="$CACHE/rootfs"

# download-images verifies the image against this file, as it does with a distribution's.
write_sums() { (cd "$CACHE" && sha256sum "$(basename "$IMAGE")" >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS); }

if [ -s "$IMAGE" ]; then
  [ -s "$CACHE/SHA256SUMS" ] || write_sums
  echo "$IMAGE"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "e2e-image: building the image needs root (debootstrap, chroot)" >&2
  exit 1
fi
for tool in debootstrap mkfs.ext4 sfdisk grub-mkimage qemu-img; do
  command -v "$tool" >/dev/null || {
    echo "e2e-image: \`$tool\` is missing (apt-get install debootstrap e2fsprogs fdisk grub-pc-bin qemu-utils)" >&2
    exit 1
  }
done

# The machine's own Debian mirror when it has one.
MIRROR="${KINIT_E2E_MIRROR:-}"
if [ -z "$MIRROR" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
  MIRROR="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
fi
MIRROR="${MIRROR:-http://deb.debian.org/debian}"

if [ ! -f "$ROOTFS/.kinit-complete" ]; then
  rm -rf "$ROOTFS"
  echo "e2e-image: debootstrap bookworm from $MIRROR into $ROOTFS" >&2
  # cloud-init goes in afterwards with apt: debootstrap does not resolve the virtual
  # packages its Python dependencies need.
  debootstrap --variant=minbase \
    --include=linux-image-amd64,systemd-sysv,init,udev,kmod,openssh-server,ifupdown,isc-dhcp-client,iproute2,locales,sudo \
    bookworm "$ROOTFS" "$MIRROR" >&2
  printf '#!/bin/sh\nexit 101\n' >"$ROOTFS/usr/sbin/policy-rc.d"   # no services start in the chroot
  chmod 0755 "$ROOTFS/usr/sbin/policy-rc.d"
  chroot "$ROOTFS" apt-get update -qq >&2
  chroot "$ROOTFS" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends cloud-init >&2
  # cloud-init renders ifupdown configuration only when netplan is absent.
  chroot "$ROOTFS" sh -c 'dpkg -s netplan.io >/dev/null 2>&1 && apt-get purge -y -qq netplan.io || true' >&2
  chroot "$ROOTFS" apt-get clean >&2
  rm -f "$ROOTFS/usr/sbin/policy-rc.d"
  touch "$ROOTFS/.kinit-complete"
fi

# Guest configuration: root filesystem by label, serial console, classic eth0 names,
# cloud-init only from the NoCloud seed (no metadata-service probing, which is slow under TCG).
echo 'LABEL=kinit-root / ext4 defaults 0 1' >"$ROOTFS/etc/fstab"
echo 'localhost' >"$ROOTFS/etc/hostname"
printf 'auto lo\niface lo inet loopback\nsource /etc/network/interfaces.d/*\n' >"$ROOTFS/etc/network/interfaces"
mkdir -p "$ROOTFS/etc/cloud/cloud.cfg.d"
# Only the host key types OpenSSH prefers: RSA key generation alone takes a minute under TCG.
printf 'datasource_list: [ NoCloud, None ]\nssh_genkeytypes: [ ed25519, ecdsa ]\n' \
  >"$ROOTFS/etc/cloud/cloud.cfg.d/90-kinit-e2e.cfg"
rm -f "$ROOTFS"/etc/ssh/ssh_host_*   # each guest makes its own (cloud-init ssh module)
KERNEL="$(cd "$ROOTFS/boot" && ls vmlinuz-* | sort -V | tail -1)"
INITRD="initrd.img-${KERNEL#vmlinuz-}"
mkdir -p "$ROOTFS/boot/grub"
cat >"$ROOTFS/boot/grub/grub.cfg" <<EOF
set timeout=0
menuentry 'Debian 12 (kinit e2e)' {
  insmod part_msdos
  insmod ext2
  search --no-floppy --label --set=root kinit-root
  linux /boot/$KERNEL root=LABEL=kinit-root ro console=ttyS0 net.ifnames=0 biosdevname=0
  initrd /boot/$INITRD
}
EOF

WORK="$(mktemp -d "$CACHE/build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
# 3 GiB disk: 1 MiB for the MBR and GRUB's core image, then the root partition.
truncate -s 3G "$WORK/disk.raw"
echo 'start=2048, type=83, bootable' | sfdisk -q "$WORK/disk.raw"
mkfs.ext4 -q -F -L kinit-root -d "$ROOTFS" "$WORK/root.raw" $((3 * 1024 - 1))M
dd if="$WORK/root.raw" of="$WORK/disk.raw" bs=1M seek=1 conv=notrunc,sparse status=none
# What grub-install does on a BIOS disk: boot.img in the MBR's code area (the partition table
# stays), core.img in the gap after it.
GRUB=/usr/lib/grub/i386-pc
grub-mkimage -O i386-pc -o "$WORK/core.img" -p '(hd0,msdos1)/boot/grub' \
  biosdisk part_msdos ext2 normal linux search search_label configfile echo
dd if="$GRUB/boot.img" of="$WORK/disk.raw" bs=440 count=1 conv=notrunc status=none
dd if="$WORK/core.img" of="$WORK/disk.raw" bs=512 seek=1 conv=notrunc status=none
qemu-img convert -O qcow2 "$WORK/disk.raw" "$WORK/image.qcow2"
mv "$WORK/image.qcow2" "$IMAGE"
write_sums
echo "$IMAGE"
