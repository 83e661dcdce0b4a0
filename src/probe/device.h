/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <libudev.h>

#include "macro.h"
#include "nvme.h"

/* What the planner knows about one block disk: read once per discovery, never
 * written. Values are what the kernel and udev said; nothing is guessed. */
typedef struct HwQueue {
        unsigned index;
        char *cpu_list;     /* as sysfs prints it, e.g. "0, 1" */
} HwQueue;

/* The hardware queues below a disk's mq/, in index order. -ENOENT: bio-based disk. */
int hw_queues_read(const char *disk_syspath, HwQueue **ret, size_t *ret_n);
void hw_queues_free(HwQueue *q, size_t n);

/* device_dup() copies each pointer below: a new one needs its copy there. */
typedef struct Device {
        char *name;         /* kernel name: nvme0n1, sda, nvme1c1n1 */
        char *syspath;      /* /sys/devices/... */
        char *devnode;      /* /dev/nvme0n1, or NULL (hidden multipath paths have none) */
        char *transport;    /* pcie, tcp, rdma, fc, loop, virtio, sata, scsi, usb, mmc, null, dm, md, zram, unknown */
        char *model;
        char *serial;
        char *firmware;
        char *wwn;
        char *nqn;          /* NVMe subsystem NQN */
        char *diskseq;      /* block/genhd.c: unique per disk instance; NULL before 5.15 */
        bool rotational;
        uint64_t size_bytes;
        int numa_node;      /* -1: none reported */
        bool has_mq;        /* blk-mq queue; false for bio-based disks (multipath heads, dm, md) */
        bool multipath_head;
        char *multipath_head_name; /* for a hidden path nvmeXcYnZ: its head nvmeXnZ */
        char *ana_state;           /* for a hidden path: its ANA state (optimized, non-optimized,
                                    * inaccessible, ...), NULL when the kernel has none */
        unsigned nr_tags;          /* mq/0/nr_tags */
        unsigned max_hw_sectors_kb;
        HwQueue *queues;
        size_t n_queues;
        bool io_poll;       /* queue/io_poll: the queue has polled hardware queues */
        NvmeCtrl *nvme;     /* the controller of an NVMe namespace or path; NULL otherwise
                             * (also for a multipath head, which has several) */
        char **properties;  /* udev properties, "KEY=value" */
} Device;

Device *device_free(Device *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Device *, device_free);
/* A deep copy, its controller and queues included; -ENOMEM. */
int device_dup(const Device *d, Device **ret);

/* udev property value or NULL. */
const char *device_property(const Device *d, const char *key);

/* Build the facts for one udev block device. -ENODEV if it is not a whole disk. */
int device_probe(struct udev_device *u, Device **ret);
/* The same, for a disk's queue rows only (the daemon at the kernel's "add"): its
 * NVMe controller is described from sysfs, without Identify or its BAR. */
int device_probe_quick(struct udev_device *u, Device **ret);

typedef struct DeviceList {
        Device **items;
        size_t n;
} DeviceList;

void device_list_done(DeviceList *l);

/* Which virtual classes of disk to include (indexes of DiscoveryClass). */
typedef struct DiscoveryFilter {
        bool loop, dm, md, zram;
} DiscoveryFilter;

/* Classify by kernel name; returns false for disks the filter leaves out. */
bool device_name_wanted(const char *name, const DiscoveryFilter *f);

/* Is `name` a hidden NVMe multipath path disk, nvmeXcYnZ (drivers/nvme/host/multipath.c)? */
bool device_name_is_nvme_path(const char *name);

/* The hidden path disks (nvmeXcYnZ) below the sysfs directory `syspath`: a
 * controller's (/sys/class/nvme/nvmeY: its paths are its children), or, for a
 * subsystem (/sys/class/nvme-subsystem/nvme-subsysX), those of each of its
 * controllers, which it lists as links named nvmeY. A path disk sends no uevent
 * (it is GENHD_FL_HIDDEN, block/genhd.c keeps its uevents suppressed), so this
 * listing is how a daemon learns of it. Sorted by name; an empty list (NULL)
 * when there are none; -errno when `syspath` cannot be read. */
int nvme_path_disks(const char *syspath, char ***ret);

/* Enumerate every whole disk with libudev, sorted by name. */
int device_enumerate(struct udev *udev, const DiscoveryFilter *f, DeviceList *ret);

/* Find one disk by kernel name or /dev path among current devices. */
int device_lookup(struct udev *udev, const char *name, Device **ret);
