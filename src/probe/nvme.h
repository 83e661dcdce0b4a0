/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <libudev.h>

#include "macro.h"

/* One NVMe controller (/sys/class/nvme/nvmeX): its identity from sysfs, and, once
 * asked for (nvme_ctrl_identify_once), from Identify Controller and Get Features 0x07
 * sent through libnvme. */
/* nvme_ctrl_dup() copies each string below: a new one needs its copy there. */
typedef struct NvmeCtrl {
        char *name;         /* nvme0 */
        char *syspath;
        char *devnode;      /* /dev/nvme0: the admin command channel */
        char *transport;    /* pcie, tcp, rdma, fc, loop */
        char *model, *serial, *firmware, *subsysnqn, *address, *state;
        int numa_node;      /* -1: none */
        unsigned queue_count;  /* sysfs queue_count: the admin queue plus the I/O queues in use */
        unsigned sqsize;       /* sysfs sqsize: the I/O queue depth in use - 1, i.e.
                                * min(CAP.MQES, nvme.io_queue_depth - 1) on PCIe */
        unsigned max_queue_entries; /* CAP.MQES + 1: the most entries an I/O queue may have,
                                     * read from BAR 0 on PCIe; 0 if unknown */
        bool has_pm_qos;       /* power/pm_qos_latency_tolerance_us: the kernel drives APST */
        bool identify_asked;   /* nvme_ctrl_identify_once() ran: the fields below are its answers */
        bool identified;       /* Identify Controller answered */
        char *identify_error;  /* why it did not (no device node, permission, status) */
        bool apsta;            /* Identify Controller APSTA bit 0 */
        unsigned npss;         /* power states - 1 */
        unsigned granted_sq, granted_cq; /* Get Features 0x07, 0 = unknown */
        int coalescing_changeable;       /* Get Features 0x08 SEL=11b bit 2; -1 = not asked (ONCS
                                          * bit 4 clear: the controller has no SEL field) */
} NvmeCtrl;

NvmeCtrl *nvme_ctrl_free(NvmeCtrl *c);
/* A deep copy (NULL for NULL); -ENOMEM. */
int nvme_ctrl_dup(const NvmeCtrl *c, NvmeCtrl **ret);
DEFINE_TRIVIAL_CLEANUP_FUNC(NvmeCtrl *, nvme_ctrl_free);

/* Describe the controller behind udev device `u` (subsystem "nvme") from sysfs and,
 * on PCIe, CAP.MQES from its BAR. No admin command: see nvme_ctrl_identify_once(). */
int nvme_ctrl_probe(struct udev_device *u, NvmeCtrl **ret);
/* Sysfs only: no BAR read either. */
int nvme_ctrl_probe_sysfs(struct udev_device *u, NvmeCtrl **ret);
/* Identify Controller, Get Features 0x07 and (where the controller has the SEL
 * field) the capabilities of 0x08: the facts a controller row is planned and
 * verified with, and reports show. Once per NvmeCtrl (later calls return at
 * once); asked only when needed (a controller or module row, a one-shot report),
 * so a daemon whose profiles set no controller feature sends no admin command and
 * never loads libnvme. Failures are recorded in identify_error, not returned: a
 * controller we cannot talk to is still one we can describe. */
void nvme_ctrl_identify_once(NvmeCtrl *c);

/* Generic Get/Set Features on the controller (libnvme nvme_get_features() and
 * nvme_set_features(), with the words of nvme-command.h). 0 on success;
 * -EOPNOTSUPP when the controller rejects the feature as not supported or not
 * changeable; other -errno otherwise. *ret_why (may be NULL) says which, in words. */
int nvme_ctrl_get_feature(const NvmeCtrl *c, uint8_t fid, uint32_t *ret_dw, char **ret_why);
int nvme_ctrl_set_feature(const NvmeCtrl *c, uint8_t fid, uint32_t cdw11, char **ret_why);
/* Get Features with SEL = supported capabilities: the capability bits. */
int nvme_ctrl_feature_caps(const NvmeCtrl *c, uint8_t fid, uint32_t *ret_caps, char **ret_why);
