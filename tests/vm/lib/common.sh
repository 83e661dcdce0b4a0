# SPDX-License-Identifier: LGPL-2.1-or-later
# Host-side helpers shared by setup-host and run-scenario. Sourced, not run.
#
# Cache layout (outside the repository; never commit any of it):
#   $IOTUNED_VM_CACHE/kernel/current            kernel version to boot ("6.1.0-57-amd64")
#   $IOTUNED_VM_CACHE/kernel/<kver>/            dpkg-deb -x of linux-image-<kver>, depmod'ed
#   $IOTUNED_VM_CACHE/kernel/<kver>/.complete   Debian package version, written last
#   $IOTUNED_VM_CACHE/initramfs/<kver>-<hash>.cpio.gz
#       busybox initramfs; <hash> covers lib/init and lib/mkinitramfs so an edit
#       to either yields a new image instead of silently booting a stale one.

VM_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_CACHE=${IOTUNED_VM_CACHE:-/var/cache/iotuned-vm}

# Modules the initramfs needs to mount a 9p root and stack an overlay on it.
# Their dependencies (netfs, fscache, 9pnet, virtio_ring, ...) are resolved with
# modprobe --show-depends against the unpacked tree, so the list stays short.
# shellcheck disable=SC2034 # used by mkinitramfs
VM_INITRAMFS_MODULES=(virtio_pci 9pnet_virtio 9p overlay)

vm_die() {
	echo "FAILURE: $*" >&2
	exit 1
}

vm_kernel_version() {
	local f="$VM_CACHE/kernel/current"
	[[ -s $f ]] || return 1
	cat "$f"
}

vm_kernel_dir() {
	echo "$VM_CACHE/kernel/$1"
}

vm_initramfs_hash() {
	cat "$VM_LIB_DIR/init" "$VM_LIB_DIR/mkinitramfs" | sha256sum | cut -c1-12
}

vm_initramfs_path() {
	echo "$VM_CACHE/initramfs/$1-$(vm_initramfs_hash).cpio.gz"
}
