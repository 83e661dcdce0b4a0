# SPDX-License-Identifier: LGPL-2.1-or-later
# Host-side helpers shared by setup-host and run-scenario. Sourced, not run.
#
# Cache layout (outside the repository; never commit any of it):
#   $IOTUNED_VM_CACHE/kernel/select/<name>      kernel version a test-bed kernel name
#                                               boots ("6.12" -> "6.12.118+deb12-amd64")
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

# The kernels of the test bed: a short name (what --kernel, meson's test names
# and the result lines say) and the Debian package that names its current
# version. 6.1 is Debian 12's own kernel; 6.12 LTS is the kernel of Debian 13 and
# of many cloud images, packaged for Debian 12 too; 6.12-rt is its PREEMPT_RT
# build. Each package is a metapackage that depends on linux-image-<kver>.
# shellcheck disable=SC2034 # used by setup-host and run-scenario
declare -A VM_KERNEL_PACKAGE=(
	[6.1]=linux-image-amd64
	[6.12]=linux-image-6.12-amd64
	[6.12-rt]=linux-image-6.12-rt-amd64
)
# shellcheck disable=SC2034
VM_KERNELS=(6.1 6.12 6.12-rt)
# shellcheck disable=SC2034
VM_DEFAULT_KERNEL=6.1

vm_kernel_known() { # NAME
	[[ -n $1 && -n ${VM_KERNEL_PACKAGE[$1]:-} ]]
}

# The kernel version (uname -r) the name boots, as setup-host last selected it.
vm_kernel_version() { # NAME
	local f="$VM_CACHE/kernel/select/$1"
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
