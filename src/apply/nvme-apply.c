/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <dirent.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cpuset.h"
#include "fileio.h"
#include "nvme-apply.h"
#include "util.h"

/* A number below dir, 0 when absent or not a number. */
static unsigned attr_uint(const char *dir, const char *attr) {
        _cleanup_free_ char *v = NULL;
        unsigned n;

        assert(dir);
        assert(attr);

        return read_attr_at(dir, attr, &v) == 0 && safe_atou(strstrip(v), &n) == 0 ? n : 0;
}

static bool is_pcie(const NvmeCtrl *c) {
        assert(c);

        return c->transport && streq(c->transport, "pcie");
}

/* ---- controller features --------------------------------------------------------- */

static int apst_unsupported(const NvmeCtrl *c, char **ret_why) {
        assert(c);

        if (!c->identified) {
                if (ret_why)
                        (void) asprintf_safe(ret_why, "cannot identify %s: %s", c->name,
                                             c->identify_error ?: "unknown error");
                return -EIO;
        }
        if (!c->apsta) {
                if (ret_why)
                        *ret_why = strdup("the controller does not support APST (Identify Controller APSTA is 0)");
                return -EOPNOTSUPP;
        }
        return 0;
}

int nvme_row_read(const NvmeCtrl *c, const Knob *k, char **ret_raw, char **ret_why) {
        uint32_t dw = 0;
        int r;

        assert(c);
        assert(k);
        assert(ret_raw);

        switch (k->id) {
        case KNOB_NVME_APST:
                /* The kernel exposes the tolerance only when it drives APST itself
                 * (drivers/nvme/host/core.c: nvme_init_ctrl_finish); that is the
                 * interface to use, because a controller reset re-applies it. */
                if (c->has_pm_qos) {
                        r = read_attr_at(c->syspath, k->attr, ret_raw);
                        if (r < 0 && ret_why)
                                (void) asprintf_safe(ret_why, "cannot read %s/%s: %s", c->name, k->attr, strerror(-r));
                        return r;
                }
                r = apst_unsupported(c, ret_why);
                if (r < 0)
                        return r;
                r = nvme_ctrl_get_feature(c, NVME_FEAT_FID_AUTO_PST, &dw, ret_why);
                if (r < 0)
                        return r;
                return asprintf_safe(ret_raw, "apste=%u", nvme_apst_from_dw(dw) ? 1u : 0u);
        case KNOB_NVME_COALESCING:
                if (!is_pcie(c)) {
                        if (ret_why)
                                (void) asprintf_safe(ret_why, "interrupt coalescing is for PCIe controllers; %s is %s",
                                                     c->name, c->transport ?: "of unknown transport");
                        return -EOPNOTSUPP;
                }
                r = nvme_ctrl_get_feature(c, NVME_FEAT_FID_IRQ_COALESCE, &dw, ret_why);
                if (r < 0)
                        return r;
                return asprintf_safe(ret_raw, "0x%08x", dw);
        default:
                return -EINVAL;
        }
}

int nvme_row_changeable(const NvmeCtrl *c, const Knob *k, const char *canonical, char **ret_why) {
        assert(c);
        assert(k);

        if (k->id == KNOB_NVME_COALESCING && c->coalescing_changeable == 0) {
                if (ret_why)
                        *ret_why = strdup("the controller reports interrupt coalescing as not changeable "
                                          "(Get Features 0x08, supported capabilities)");
                return 0;
        }
        /* Without the kernel's pm_qos interface only "off" can be set (nvme_row_write). */
        if (k->id == KNOB_NVME_APST && !c->has_pm_qos && canonical && !streq(canonical, "off")) {
                if (ret_why)
                        *ret_why = strdup("the kernel does not drive APST on this controller (a quirk); "
                                          "only 'off' can be set");
                return 0;
        }
        return 1;
}

int nvme_row_write(const NvmeCtrl *c, const Knob *k, const char *canonical, char **ret_why) {
        NvmeCoalescing co;
        int r;

        assert(c);
        assert(k);
        assert(canonical);

        switch (k->id) {
        case KNOB_NVME_APST:
                if (c->has_pm_qos) {
                        r = write_attr_at(c->syspath, k->attr, streq(canonical, "off") ? "0" : canonical);
                        if (r < 0 && ret_why)
                                (void) asprintf_safe(ret_why, "writing %s/%s failed: %s", c->name, k->attr,
                                                     strerror(-r));
                        return r;
                }
                /* The controller supports APST but the kernel leaves it alone (a quirk):
                 * turning it off needs no table; building one is the kernel's job. */
                if (!streq(canonical, "off")) {
                        if (ret_why)
                                *ret_why = strdup("the kernel does not drive APST on this controller (a quirk); "
                                                  "only 'off' can be set");
                        return -EOPNOTSUPP;
                }
                return nvme_ctrl_set_feature(c, NVME_FEAT_FID_AUTO_PST, nvme_apst_to_cdw11(false), ret_why);
        case KNOB_NVME_COALESCING:
                r = nvme_coalescing_parse(canonical, &co);
                if (r < 0)
                        return r;
                return nvme_ctrl_set_feature(c, NVME_FEAT_FID_IRQ_COALESCE, nvme_coalescing_to_cdw11(&co), ret_why);
        default:
                return -EINVAL;
        }
}

/* ---- the modprobe.d drop-in ----------------------------------------------------- */

static const KnobId module_knobs[] = { KNOB_NVME_POLL_QUEUES, KNOB_NVME_WRITE_QUEUES, KNOB_NVME_IO_QUEUE_DEPTH };

int nvme_dropin_read(const char *path, int values[_KNOB_MAX]) {
        _cleanup_free_ char *text = NULL;
        char *save = NULL;
        int r;

        assert(path);

        for (size_t k = 0; k < _KNOB_MAX; k++)
                values[k] = -1;
        r = read_full_file(path, 64 * 1024, &text);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        /* modprobe.d(5): "options MODULE OPTION=VALUE ..."; only our own lines matter. */
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *tsave = NULL, *tok;
                line = strstrip(line);
                if (!str_startswith(line, "options"))
                        continue;
                tok = strtok_r(line, " \t", &tsave);
                tok = strtok_r(NULL, " \t", &tsave);
                if (!tok || !streq(tok, "nvme"))
                        continue;
                while ((tok = strtok_r(NULL, " \t", &tsave))) {
                        char *eq = strchr(tok, '=');
                        unsigned v;
                        if (!eq || safe_atou(eq + 1, &v) < 0 || v > INT32_MAX)
                                continue;
                        *eq = 0;
                        for (size_t i = 0; i < ELEMENTSOF(module_knobs); i++)
                                if (streq(tok, knob_table[module_knobs[i]].attr))
                                        values[module_knobs[i]] = (int) v;
                }
        }
        return 0;
}

int nvme_dropin_write(const char *path, const int values[_KNOB_MAX]) {
        _cleanup_free_ char *text = NULL, *opts = NULL;

        assert(path);

        for (size_t i = 0; i < ELEMENTSOF(module_knobs); i++) {
                char *j = NULL;
                if (values[module_knobs[i]] < 0)
                        continue;
                if (asprintf_safe(&j, "%s %s=%d", opts ?: "", knob_table[module_knobs[i]].attr,
                                  values[module_knobs[i]]) < 0)
                        return -ENOMEM;
                free(opts);
                opts = j;
        }
        if (!opts)
                return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
        if (asprintf_safe(&text,
                          "# Written by iotuned: the NVMe queue counts and depth its profiles ask for (the\n"
                          "# largest any of them wants). nvme.poll_queues, write_queues and io_queue_depth\n"
                          "# are read when the driver probes a controller, so they take effect at the next\n"
                          "# boot (rebuild the initramfs if it loads nvme) or when iotuned rebinds an idle\n"
                          "# controller.\n"
                          "# iotunectl restore removes this file; edit profiles, not this file.\n"
                          "options nvme%s\n",
                          opts) < 0)
                return -ENOMEM;
        return write_file_atomic(path, text, strlen(text));
}

/* kernel/params.c: every module with parameters has /sys/module/<name>/parameters;
 * only a loaded (not built-in) module also has initstate (kernel/module/sysfs.c). */
NvmeModuleKind nvme_module_kind(const char *module_dir) {
        _cleanup_free_ char *init = path_join(module_dir, "initstate"), *params = path_join(module_dir, "parameters");

        assert(module_dir);

        if (init && access(init, F_OK) == 0)
                return NVME_MODULE_LOADABLE;
        if (params && access(params, F_OK) == 0)
                return NVME_MODULE_BUILTIN;
        return NVME_MODULE_ABSENT;
}

/* ---- the controller's namespaces ------------------------------------------------ */

/* Block devices directly below the controller: nvmeXnY, or hidden paths nvmeXcYnZ. */
static int ctrl_namespaces(const char *ctrl_syspath, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        DIR *d = opendir(ctrl_syspath);
        struct dirent *de;

        assert(ctrl_syspath);
        assert(ret);

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                _cleanup_free_ char *q = NULL;
                if (!str_startswith(de->d_name, "nvme") || !strchr(de->d_name + 4, 'n'))
                        continue;
                q = path_join(ctrl_syspath, de->d_name);
                if (!q) {
                        closedir(d);
                        return -ENOMEM;
                }
                if (access(q, F_OK) == 0 && strv_extend(&l, de->d_name) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
        }
        closedir(d);
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

int nvme_ctrl_queue_map(const char *ctrl_syspath, NvmeQueueMap *ret, char **ret_disk) {
        _cleanup_strv_free_ char **ns = NULL;
        int r = ctrl_namespaces(ctrl_syspath, &ns);

        assert(ctrl_syspath);
        assert(ret);

        if (r < 0)
                return r;
        for (char **n = ns; n && *n; n++) {
                _cleanup_free_ char *dir = path_join(ctrl_syspath, *n), *poll = NULL;
                HwQueue *q = NULL;
                size_t nq = 0;
                if (!dir)
                        return -ENOMEM;
                if (hw_queues_read(dir, &q, &nq) < 0 || nq == 0) {
                        hw_queues_free(q, nq);
                        continue;
                }
                (void) read_attr_at(dir, "queue/io_poll", &poll);
                r = nvme_queue_map_from_queues(q, nq, poll && streq(strstrip(poll), "1"), ret);
                hw_queues_free(q, nq);
                if (r < 0)
                        return r;
                ret->nr_tags = attr_uint(dir, "mq/0/nr_tags");
                if (ret_disk)
                        *ret_disk = strdup(*n);
                return 0;
        }
        return -ENOENT;
}

/* ---- rebinding ------------------------------------------------------------------- */

/* Where a block device (or one of its partitions) is mounted, from mountinfo. */
static char *mount_point_of(const char *disk_syspath) {
        _cleanup_free_ char *info = NULL;
        char *save = NULL, *found = NULL;
        _cleanup_strv_free_ char **devs = NULL;
        DIR *d;
        struct dirent *de;
        char *v = NULL;

        assert(disk_syspath);

        if (read_attr_at(disk_syspath, "dev", &v) == 0 && strv_push(&devs, strstrip(v)) < 0)
                return NULL;
        d = opendir(disk_syspath);
        while (d && (de = readdir(d))) {
                _cleanup_free_ char *rel = NULL;
                char *pv = NULL;
                if (de->d_name[0] == '.' || asprintf_safe(&rel, "%s/partition", de->d_name) < 0)
                        continue;
                if (read_attr_at(disk_syspath, rel, &pv) < 0)
                        continue;
                free(pv);
                free(rel);
                rel = NULL;
                if (asprintf_safe(&rel, "%s/dev", de->d_name) >= 0 && read_attr_at(disk_syspath, rel, &pv) == 0)
                        (void) strv_push(&devs, strstrip(pv));
        }
        if (d)
                closedir(d);
        if (read_full_file("/proc/self/mountinfo", 4 * 1024 * 1024, &info) < 0)
                return NULL;
        /* "36 35 98:0 /mnt1 /mnt/parent rw ...": field 3 is major:minor, field 5 the mount point. */
        for (char *line = strtok_r(info, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save)) {
                char majmin[32], mnt[4096];
                if (sscanf(line, "%*s %*s %31s %*s %4095s", majmin, mnt) == 2 && strv_contains(devs, majmin))
                        found = strdup(mnt);
        }
        return found;
}

/* Requests in flight now (inflight), or completed within a quarter second (the
 * read and write I/O counters of stat move): block/genhd.c part_inflight_show,
 * Documentation/block/stat.rst. Unreadable counts as busy. */
static bool namespace_busy(const char *disk_syspath) {
        unsigned long long a[2] = {}, b[2] = {}, in[2] = {};
        _cleanup_free_ char *s1 = NULL, *s2 = NULL, *inflight = NULL;

        assert(disk_syspath);

        if (read_attr_at(disk_syspath, "inflight", &inflight) < 0 ||
            sscanf(inflight, "%llu %llu", &in[0], &in[1]) != 2 || in[0] || in[1])
                return true;
        if (read_attr_at(disk_syspath, "stat", &s1) < 0 || sscanf(s1, "%llu %*u %*u %*u %llu", &a[0], &a[1]) != 2)
                return true;
        usleep(250 * 1000);
        if (read_attr_at(disk_syspath, "stat", &s2) < 0 || sscanf(s2, "%llu %*u %*u %*u %llu", &b[0], &b[1]) != 2)
                return true;
        return a[0] != b[0] || a[1] != b[1];
}

int nvme_ctrl_in_use(const NvmeCtrl *c, char **ret_why) {
        _cleanup_strv_free_ char **ns = NULL;
        int r = ctrl_namespaces(c->syspath, &ns);

        assert(c);

        if (r < 0)
                return r;
        for (char **n = ns; n && *n; n++) {
                _cleanup_free_ char *dir = path_join(c->syspath, *n), *mnt = NULL, *node = NULL;
                int fd;
                if (!dir)
                        return -ENOMEM;
                if (strchr(*n + 4, 'c')) {
                        (void) asprintf_safe(ret_why, "%s is a path of a multipath subsystem", *n);
                        return 1;
                }
                mnt = mount_point_of(dir);
                if (mnt) {
                        (void) asprintf_safe(ret_why, "%s is mounted at %s", *n, mnt);
                        return 1;
                }
                /* O_EXCL on a block device fails with EBUSY while anyone holds it
                 * exclusively: a mount, swap, LVM, MD, dm (block/bdev.c: bd_may_claim). */
                if (asprintf_safe(&node, "/dev/%s", *n) < 0)
                        return -ENOMEM;
                if (namespace_busy(dir)) {
                        (void) asprintf_safe(ret_why, "%s is doing I/O", *n);
                        return 1;
                }
                fd = open(node, O_RDONLY | O_EXCL | O_CLOEXEC | O_NONBLOCK);
                if (fd < 0 && errno == EBUSY) {
                        (void) asprintf_safe(ret_why, "%s is in use (held open exclusively: swap, LVM, MD, dm "
                                                      "or a mount in another namespace)", *n);
                        return 1;
                }
                if (fd < 0) {
                        (void) asprintf_safe(ret_why, "cannot check whether %s is in use: %s", node, strerror(errno));
                        return 1; /* unsure means no */
                }
                close(fd);
        }
        return 0;
}

char *nvme_rebind_key(const NvmeCtrl *c, const int values[_KNOB_MAX]) {
        char *key;

        assert(c);

        key = strdup(c->address ?: c->name);
        for (size_t i = 0; key && i < ELEMENTSOF(module_knobs); i++) {
                char *k = NULL;
                if (asprintf_safe(&k, "%s %s=%d", key, knob_table[module_knobs[i]].attr, values[module_knobs[i]]) < 0)
                        k = NULL;
                free(key);
                key = k;
        }
        return key;
}

unsigned possible_cpus(void) {
        _cleanup_free_ char *v = NULL;
        CpuSet s = {};
        unsigned n = 0;
        if (read_attr("/sys/devices/system/cpu/possible", &v) == 0 && cpuset_parse(v, &s) == 0)
                n = (unsigned) cpuset_count(&s);
        cpuset_done(&s);
        return n;
}

int nvme_ctrl_rebind(const NvmeCtrl *c, const int values[_KNOB_MAX], uint64_t timeout_usec, bool *ret_unbound,
                     NvmeQueueMap *ret_map, char **ret_why) {
        _cleanup_free_ char *ctrl_dir = NULL;
        uint64_t deadline;
        int r;

        assert(c);
        assert(ret_unbound);
        assert(ret_map);

        *ret_unbound = false;
        if (!is_pcie(c) || !c->address) {
                (void) asprintf_safe(ret_why, "%s is not a PCIe controller", c->name);
                return -EOPNOTSUPP;
        }
        for (size_t i = 0; i < ELEMENTSOF(module_knobs); i++) {
                _cleanup_free_ char *p = NULL, *v = NULL;
                if (values[module_knobs[i]] < 0)
                        continue;
                p = path_join(NVME_SYSFS_MODULE "/parameters", knob_table[module_knobs[i]].attr);
                if (!p || asprintf_safe(&v, "%d", values[module_knobs[i]]) < 0)
                        return -ENOMEM;
                /* io_queue_depth is read again on every controller reset too
                 * (nvme_reset_work -> nvme_pci_enable), while a tag set keeps the depth
                 * it was made with: a live value below the current one would give
                 * another controller that resets later fewer queue entries than tags.
                 * Only ever raise it live; a lower one waits in the drop-in for the
                 * next boot, when every controller is probed with it. */
                if (knob_table[module_knobs[i]].sets_tag_depth &&
                    (unsigned) values[module_knobs[i]] <=
                            attr_uint(NVME_SYSFS_MODULE "/parameters", knob_table[module_knobs[i]].attr))
                        continue;
                r = write_attr(p, v);
                if (r < 0) {
                        (void) asprintf_safe(ret_why, "cannot set nvme.%s=%s: %s", knob_table[module_knobs[i]].attr,
                                             v, strerror(-r));
                        return r;
                }
        }
        r = write_attr("/sys/bus/pci/drivers/nvme/unbind", c->address);
        if (r < 0) {
                (void) asprintf_safe(ret_why, "unbinding %s (%s) from nvme failed: %s", c->name, c->address,
                                     strerror(-r));
                return r;
        }
        *ret_unbound = true;
        r = write_attr("/sys/bus/pci/drivers/nvme/bind", c->address);
        if (r < 0) {
                (void) asprintf_safe(ret_why, "binding %s back to nvme failed: %s; the controller is unbound",
                                     c->address, strerror(-r));
                return r;
        }
        /* The driver probes asynchronously (nvme_reset_work, then the namespace scan). */
        if (asprintf_safe(&ctrl_dir, "/sys/bus/pci/devices/%s/nvme", c->address) < 0)
                return -ENOMEM;
        deadline = now_usec(CLOCK_MONOTONIC) + timeout_usec;
        for (;;) {
                DIR *d = opendir(ctrl_dir);
                struct dirent *de;
                bool ready = false;
                while (d && (de = readdir(d)) && !ready) {
                        _cleanup_free_ char *cdir = NULL, *state = NULL;
                        if (!str_startswith(de->d_name, "nvme") || !(cdir = path_join(ctrl_dir, de->d_name)))
                                continue;
                        ready = read_attr_at(cdir, "state", &state) == 0 && streq(strstrip(state), "live") &&
                                nvme_ctrl_queue_map(cdir, ret_map, NULL) == 0 && ret_map->known;
                }
                if (d)
                        closedir(d);
                if (ready)
                        return 0;
                if (now_usec(CLOCK_MONOTONIC) > deadline) {
                        (void) asprintf_safe(ret_why, "%s did not come back with its namespaces within %" PRIu64 " s",
                                             c->address, timeout_usec / 1000000u);
                        return -ETIMEDOUT;
                }
                usleep(100 * 1000);
        }
}
