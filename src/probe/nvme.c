/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <endian.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libnvme.h>

#include "nvme-command.h"
#include "nvme.h"
#include "timing.h"
#include "sysfs-attr.h"
#include "util.h"

NvmeCtrl *nvme_ctrl_free(NvmeCtrl *c) {
        if (!c)
                return NULL;
        free(c->name);
        free(c->syspath);
        free(c->devnode);
        free(c->transport);
        free(c->model);
        free(c->serial);
        free(c->firmware);
        free(c->subsysnqn);
        free(c->address);
        free(c->state);
        free(c->identify_error);
        free(c);
        return NULL;
}

int nvme_ctrl_dup(const NvmeCtrl *c, NvmeCtrl **ret) {
        _cleanup_(nvme_ctrl_freep) NvmeCtrl *n = NULL;

        assert(ret);

        if (!c) {
                *ret = NULL;
                return 0;
        }
        n = malloc(sizeof(NvmeCtrl));
        if (!n)
                return -ENOMEM;
        *n = *c; /* the numbers and flags; every string is copied below */
        n->name = n->syspath = n->devnode = n->transport = n->model = n->serial = n->firmware = NULL;
        n->subsysnqn = n->address = n->state = n->identify_error = NULL;
        if (!copy_string(c->name, &n->name) || !copy_string(c->syspath, &n->syspath) ||
            !copy_string(c->devnode, &n->devnode) || !copy_string(c->transport, &n->transport) ||
            !copy_string(c->model, &n->model) || !copy_string(c->serial, &n->serial) ||
            !copy_string(c->firmware, &n->firmware) || !copy_string(c->subsysnqn, &n->subsysnqn) ||
            !copy_string(c->address, &n->address) || !copy_string(c->state, &n->state) ||
            !copy_string(c->identify_error, &n->identify_error))
                return -ENOMEM;
        *ret = TAKE_PTR(n);
        return 0;
}

static unsigned sysattr_uint(struct udev_device *u, const char *attr) {
        _cleanup_free_ char *v = attr_trimmed(u, attr);
        unsigned n;

        assert(u);
        assert(attr);

        return v && safe_atou(v, &n) == 0 ? n : 0;
}

static int open_ctrl(const NvmeCtrl *c, char **ret_why) {
        int fd;

        assert(c);

        if (!c->devnode) {
                if (ret_why)
                        *ret_why = strdup("the controller has no device node");
                return -ENODEV;
        }
        /* O_NONBLOCK: something other than the controller's character device at its
         * node (a FIFO) must not block the open; its ioctls then simply fail. */
        fd = open(c->devnode, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) {
                int r = -errno;
                if (ret_why)
                        (void) asprintf_safe(ret_why, "cannot open %s: %s%s", c->devnode, strerror(-r),
                                             r == -EPERM || r == -EACCES
                                                     ? " (admin commands need root with CAP_SYS_ADMIN, and in a "
                                                       "unit DeviceAllow=char-nvme rw, as iotuned.service has)"
                                                     : "");
                return r;
        }
        return fd;
}

/* libnvme returns -1 with errno for ioctl failures and the NVMe status (> 0) when the
 * controller completed the command with an error. */
static int command_result(int r, uint8_t fid, const char *what, char **ret_why) {
        int status, sct, sc;

        assert(what);

        if (r == 0)
                return 0;
        if (r < 0) {
                r = -errno;
                if (ret_why && r == -ELIBACC)
                        (void) asprintf_safe(ret_why, "%s feature 0x%02x not sent: libnvme is not available (%s)",
                                             what, fid, nvme_command_unavailable() ?: "unknown error");
                else if (ret_why)
                        (void) asprintf_safe(ret_why, "%s feature 0x%02x failed: %s", what, fid, strerror(-r));
                return r;
        }
        status = nvme_status_get_value(r);
        sct = NVME_GET(status, SCT);
        sc = NVME_GET(status, SC);
        if (ret_why)
                (void) asprintf_safe(ret_why, "controller answered %s feature 0x%02x with status 0x%x (%s)", what, fid,
                                     status, nvme_command_status_string(r));
        /* Generic status Invalid Field in Command is how a controller says it does not
         * implement a feature; 0x0D is Feature Identifier Not Saveable, 0x0E Feature
         * Not Changeable (NVMe 2.0 figure 102 and figure 107). */
        if (nvme_status_get_type(r) == NVME_STATUS_TYPE_NVME &&
            ((sct == NVME_SCT_GENERIC && sc == NVME_SC_INVALID_FIELD) ||
             (sct == NVME_SCT_CMD_SPECIFIC &&
              (sc == NVME_SC_FEATURE_NOT_CHANGEABLE || sc == NVME_SC_FEATURE_NOT_SAVEABLE))))
                return -EOPNOTSUPP;
        return -EIO;
}

/* Get Features: the current value (SEL 000b), or the capabilities (SEL 011b). */
static int get_feature(const NvmeCtrl *c, uint8_t fid, bool caps, uint32_t *ret_dw, char **ret_why) {
        struct nvme_get_features_args a;
        uint8_t data[NVME_APST_TABLE_BYTES] = {};
        uint32_t result = 0;
        int fd, r;

        assert(c);
        assert(ret_dw);

        fd = open_ctrl(c, ret_why);
        if (fd < 0)
                return fd;
        if (caps)
                nvme_feature_caps_args(&a, fd, fid, &result);
        else /* Only APST returns data (its table); the buffer is there for it. */
                nvme_feature_get_args(&a, fd, fid, &result, fid == NVME_FEAT_FID_AUTO_PST ? data : NULL,
                                      fid == NVME_FEAT_FID_AUTO_PST ? sizeof(data) : 0);
        r = command_result(nvme_command_get_features(&a), fid, caps ? "Get Features (capabilities of)" : "Get Features",
                           ret_why);
        close(fd);
        if (r == 0)
                *ret_dw = result;
        return r;
}

int nvme_ctrl_get_feature(const NvmeCtrl *c, uint8_t fid, uint32_t *ret_dw, char **ret_why) {
        assert(c);
        assert(ret_dw);

        return get_feature(c, fid, false, ret_dw, ret_why);
}

int nvme_ctrl_feature_caps(const NvmeCtrl *c, uint8_t fid, uint32_t *ret_caps, char **ret_why) {
        assert(c);
        assert(ret_caps);

        return get_feature(c, fid, true, ret_caps, ret_why);
}

int nvme_ctrl_set_feature(const NvmeCtrl *c, uint8_t fid, uint32_t cdw11, char **ret_why) {
        struct nvme_set_features_args a;
        uint8_t table[NVME_APST_TABLE_BYTES] = {};
        uint32_t result = 0;
        int fd, r;

        assert(c);

        fd = open_ctrl(c, ret_why);
        if (fd < 0)
                return fd;
        nvme_feature_set_args(&a, fd, fid, cdw11, &result, fid == NVME_FEAT_FID_AUTO_PST ? table : NULL,
                              fid == NVME_FEAT_FID_AUTO_PST ? sizeof(table) : 0);
        r = command_result(nvme_command_set_features(&a), fid, "Set Features", ret_why);
        close(fd);
        return r;
}

void nvme_ctrl_identify_once(NvmeCtrl *c) {
        struct nvme_id_ctrl id = {};
        uint32_t dw = 0;
        int fd, r;

        assert(c);

        if (c->identify_asked)
                return;
        TIMING_SCOPE(TIMING_PROBE_NVME);
        c->identify_asked = true;
        fd = open_ctrl(c, &c->identify_error);
        if (fd < 0)
                return;
        r = command_result(nvme_command_identify_ctrl(fd, &id), 0, "Identify", &c->identify_error);
        close(fd);
        if (r < 0)
                return;
        c->identified = true;
        c->apsta = id.apsta & NVME_CTRL_APSTA_APST;
        c->npss = id.npss;
        /* Whether Set Features 0x08 can change anything: asked up front, so that plan
         * and verify (which never write) tell "not changeable" from drift. */
        if (le16toh(id.oncs) & NVME_CTRL_ONCS_SAVE_FEATURES) {
                uint32_t caps = 0;
                if (nvme_ctrl_feature_caps(c, NVME_FEAT_FID_IRQ_COALESCE, &caps, NULL) == 0)
                        c->coalescing_changeable = !!(caps & NVME_FEATURE_CAP_CHANGEABLE);
        }
        /* Get Features 0x07 reports what the controller granted at probe. */
        if (nvme_ctrl_get_feature(c, NVME_FEAT_FID_NUM_QUEUES, &dw, NULL) == 0)
                nvme_num_queues_from_dw(dw, &c->granted_sq, &c->granted_cq);
}

/* CAP.MQES + 1 of a PCIe controller, 0 if it cannot be read. CAP is the 64-bit
 * register at offset 0 of BAR 0, MQES its bits 15:0, zero-based (NVMe Base
 * Specification 2.0, 3.1.3.1). No sysfs attribute shows it (sqsize is already
 * limited by nvme.io_queue_depth), so it is read as nvme-cli's show-regs reads it:
 * through a read-only shared mapping of the PCI function's resource0, a read without
 * side effects. Only root may open resource0, and the kernel refuses the mapping
 * under lockdown and, with CONFIG_IO_STRICT_DEVMEM (Debian's kernels), while a
 * driver has claimed the BAR, as nvme has (drivers/pci/pci-sysfs.c:
 * pci_mmap_resource, kernel/resource.c: iomem_is_exclusive): then it is unknown,
 * and a rebind that comes back with fewer entries than asked for shows it. */
static unsigned pcie_max_queue_entries(struct udev_device *u) {
        struct udev_device *pci = udev_device_get_parent_with_subsystem_devtype(u, "pci", NULL);
        _cleanup_free_ char *p = pci ? path_join(udev_device_get_syspath(pci), "resource0") : NULL;
        _cleanup_close_ int fd = -1;
        long page = sysconf(_SC_PAGESIZE);
        const volatile uint32_t *regs;
        struct stat st;
        uint32_t lo;

        assert(u);

        if (!p || page <= 0)
                return 0;
        fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 8)
                return 0;
        regs = mmap(NULL, (size_t) page, PROT_READ, MAP_SHARED, fd, 0);
        if (regs == MAP_FAILED)
                return 0;
        lo = le32toh(regs[0]); /* one 32-bit read: the register is read in 32-bit halves */
        munmap((void *) regs, (size_t) page);
        /* All ones is what a read of a function that is gone (surprise removal) returns. */
        if (lo == UINT32_MAX)
                return 0;
        return (lo & 0xffffu) + 1;
}

static int ctrl_probe(struct udev_device *u, bool bar, NvmeCtrl **ret) {
        TIMING_SCOPE(TIMING_PROBE_NVME);
        assert(u);
        assert(ret);

        _cleanup_(nvme_ctrl_freep) NvmeCtrl *c = calloc(1, sizeof(NvmeCtrl));
        _cleanup_free_ char *pm = NULL;
        char *n;
        int node;

        if (!c)
                return -ENOMEM;
        c->name = strdup(udev_device_get_sysname(u));
        c->syspath = strdup(udev_device_get_syspath(u));
        if (!c->name || !c->syspath)
                return -ENOMEM;
        c->devnode = strdup_or_null(udev_device_get_devnode(u));
        c->transport = attr_trimmed(u, "transport");
        c->model = attr_trimmed(u, "model");
        c->serial = attr_trimmed(u, "serial");
        c->firmware = attr_trimmed(u, "firmware_rev");
        c->subsysnqn = attr_trimmed(u, "subsysnqn");
        c->address = attr_trimmed(u, "address");
        c->state = attr_trimmed(u, "state");
        c->numa_node = -1;
        c->coalescing_changeable = -1;
        n = attr_trimmed(u, "numa_node");
        if (n && safe_atoi(n, &node) == 0)
                c->numa_node = node;
        free(n);
        c->queue_count = sysattr_uint(u, "queue_count");
        c->sqsize = sysattr_uint(u, "sqsize");
        if (bar && c->transport && streq(c->transport, "pcie"))
                c->max_queue_entries = pcie_max_queue_entries(u);
        pm = path_join(c->syspath, "power/pm_qos_latency_tolerance_us");
        c->has_pm_qos = pm && access(pm, F_OK) == 0;
        *ret = TAKE_PTR(c);
        return 0;
}

int nvme_ctrl_probe(struct udev_device *u, NvmeCtrl **ret) {
        return ctrl_probe(u, true, ret);
}

int nvme_ctrl_probe_sysfs(struct udev_device *u, NvmeCtrl **ret) {
        return ctrl_probe(u, false, ret);
}
