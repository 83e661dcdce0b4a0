/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <glob.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "device.h"
#include "timing.h"
#include "sysfs-attr.h"
#include "fileio.h"
#include "escape.h"
#include "log.h"
#include "util.h"

Device *device_free(Device *d) {
        if (!d)
                return NULL;
        free(d->name);
        free(d->syspath);
        free(d->devnode);
        free(d->transport);
        free(d->model);
        free(d->serial);
        free(d->firmware);
        free(d->wwn);
        free(d->nqn);
        nvme_ctrl_free(d->nvme);
        free(d->diskseq);
        free(d->multipath_head_name);
        free(d->ana_state);
        hw_queues_free(d->queues, d->n_queues);
        strv_free(d->properties);
        free(d);
        return NULL;
}

int device_dup(const Device *d, Device **ret) {
        _cleanup_(device_freep) Device *n = NULL;

        assert(d);
        assert(ret);

        n = malloc(sizeof(Device));
        if (!n)
                return -ENOMEM;
        *n = *d; /* the numbers and flags; every pointer is copied below */
        n->name = n->syspath = n->devnode = n->transport = n->model = n->serial = NULL;
        n->firmware = n->wwn = n->nqn = n->diskseq = n->multipath_head_name = n->ana_state = NULL;
        n->queues = NULL;
        n->n_queues = 0;
        n->nvme = NULL;
        n->properties = NULL;
        if (!copy_string(d->name, &n->name) || !copy_string(d->syspath, &n->syspath) ||
            !copy_string(d->devnode, &n->devnode) || !copy_string(d->transport, &n->transport) ||
            !copy_string(d->model, &n->model) || !copy_string(d->serial, &n->serial) ||
            !copy_string(d->firmware, &n->firmware) || !copy_string(d->wwn, &n->wwn) || !copy_string(d->nqn, &n->nqn) ||
            !copy_string(d->diskseq, &n->diskseq) || !copy_string(d->multipath_head_name, &n->multipath_head_name) ||
            !copy_string(d->ana_state, &n->ana_state))
                return -ENOMEM;
        if (d->n_queues > 0) {
                n->queues = calloc(d->n_queues, sizeof(HwQueue));
                if (!n->queues)
                        return -ENOMEM;
                n->n_queues = d->n_queues;
                for (size_t i = 0; i < d->n_queues; i++) {
                        n->queues[i].index = d->queues[i].index;
                        if (!copy_string(d->queues[i].cpu_list, &n->queues[i].cpu_list))
                                return -ENOMEM;
                }
        }
        if (nvme_ctrl_dup(d->nvme, &n->nvme) < 0 || strv_copy(d->properties, &n->properties) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(n);
        return 0;
}

void device_list_done(DeviceList *l) {
        assert(l);

        for (size_t i = 0; i < l->n; i++)
                device_free(l->items[i]);
        free(l->items);
        l->items = NULL;
        l->n = 0;
}

const char *device_property(const Device *d, const char *key) {
        size_t n = strlen(key);

        assert(d);
        assert(key);

        for (char **p = d->properties; p && *p; p++)
                if (strneq(*p, key, n) && (*p)[n] == '=')
                        return *p + n + 1;
        return NULL;
}

static char *prop_dup(struct udev_device *u, const char *key) {
        const char *v = udev_device_get_property_value(u, key);

        assert(u);
        assert(key);

        return isempty(v) ? NULL : strdup(v);
}

/* Does `name` look like "<prefix><digits>..."? */
static bool name_has_prefix_num(const char *name, const char *prefix) {
        assert(name);
        assert(prefix);

        return str_startswith(name, prefix) && isdigit((unsigned char) name[strlen(prefix)]);
}

bool device_name_wanted(const char *name, const DiscoveryFilter *f) {
        assert(name);
        assert(f);

        if (name_has_prefix_num(name, "loop"))
                return f->loop;
        if (str_startswith(name, "dm-"))
                return f->dm;
        if (name_has_prefix_num(name, "md"))
                return f->md;
        if (name_has_prefix_num(name, "zram"))
                return f->zram;
        return true;
}

bool device_name_is_nvme_path(const char *name) {
        unsigned x, y, z;
        int n = 0;

        assert(name);

        return sscanf(name, "nvme%uc%un%u%n", &x, &y, &z, &n) == 3 && name[n] == 0 && isdigit((unsigned char) name[4]);
}

/* nvmeY, a controller's name (a subsystem's link to it). */
static bool name_is_nvme_ctrl(const char *name) {
        assert(name);

        if (!name_has_prefix_num(name, "nvme"))
                return false;
        for (const char *c = name + 4; *c; c++)
                if (!isdigit((unsigned char) *c))
                        return false;
        return true;
}

static int path_disks_add(const char *dir, bool follow_ctrls, char ***l) {
        DIR *dh;
        struct dirent *de;
        int r = 0;

        assert(dir);
        assert(l);

        dh = opendir(dir);
        if (!dh)
                return -errno;
        while ((de = readdir(dh))) {
                if (device_name_is_nvme_path(de->d_name)) {
                        if (!strv_contains(*l, de->d_name) && strv_extend(l, de->d_name) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                } else if (follow_ctrls && name_is_nvme_ctrl(de->d_name)) {
                        _cleanup_free_ char *sub = path_join(dir, de->d_name);
                        if (!sub) {
                                r = -ENOMEM;
                                break;
                        }
                        /* A controller deleted meanwhile has no paths left: not an error. */
                        r = path_disks_add(sub, false, l);
                        if (r == -ENOMEM)
                                break;
                        r = 0;
                }
        }
        closedir(dh);
        return r;
}

static int cmp_name(const void *a, const void *b) {
        return strverscmp(*(char * const *) a, *(char * const *) b);
}

int nvme_path_disks(const char *syspath, char ***ret) {
        char **l = NULL;
        int r;

        assert(syspath);
        assert(ret);

        r = path_disks_add(syspath, true, &l);
        if (r < 0) {
                strv_free(l);
                return r;
        }
        if (l)
                qsort(l, strv_length(l), sizeof(char *), cmp_name);
        *ret = l;
        return 0;
}

/* nvmeXcYnZ is the hidden per-controller path of the multipath head nvmeXnZ
 * (drivers/nvme/host/multipath.c: nvme_set_disk_name). */
static char *multipath_head_of(const char *name) {
        unsigned x, y, z;
        int n = 0;
        char *head;

        assert(name);

        if (sscanf(name, "nvme%uc%un%u%n", &x, &y, &z, &n) != 3 || name[n] != 0)
                return NULL;
        if (asprintf(&head, "nvme%un%u", x, z) < 0)
                return NULL;
        return head;
}

/* A transport name for rules: the kernel's own for NVMe (/sys/class/nvme/nvmeX/transport:
 * pcie, tcp, rdma, fc, loop), else the bus the disk hangs off. */
/* A disk right below /sys/devices/virtual/block (loop, dm, md, zram, null_blk,
 * brd) hangs off no bus: no parent is worth walking up to. */
static bool is_bare_virtual(const char *syspath) {
        return syspath && str_startswith(syspath, "/sys/devices/virtual/block/");
}

static char *detect_transport(struct udev_device *u, const char *name) {
        struct udev_device *p;
        const char *bus;

        assert(u);
        assert(name);

        if (name_has_prefix_num(name, "loop"))
                return strdup("loop");
        if (str_startswith(name, "dm-"))
                return strdup("dm");
        if (name_has_prefix_num(name, "md"))
                return strdup("md");
        if (name_has_prefix_num(name, "zram"))
                return strdup("zram");
        if (name_has_prefix_num(name, "nullb"))
                return strdup("null");
        if (is_bare_virtual(udev_device_get_syspath(u)))
                return strdup("unknown");

        p = udev_device_get_parent_with_subsystem_devtype(u, "nvme", NULL);
        if (p) {
                char *t = attr_trimmed(p, "transport");
                return t ?: strdup("unknown");
        }
        p = udev_device_get_parent_with_subsystem_devtype(u, "nvme-subsystem", NULL);
        if (p) {
                /* A multipath head: every path of one subsystem shares a transport in
                 * practice; report the first controller's. */
                _cleanup_free_ char *pattern = path_join(udev_device_get_syspath(p), "nvme*/transport");
                glob_t g = {};
                char *t = NULL;
                if (pattern && glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0 && read_attr(g.gl_pathv[0], &t) == 0)
                        strstrip(t);
                globfree(&g);
                return t ?: strdup("unknown");
        }
        if (udev_device_get_parent_with_subsystem_devtype(u, "virtio", NULL))
                return strdup("virtio");
        if (udev_device_get_parent_with_subsystem_devtype(u, "mmc", NULL))
                return strdup("mmc");
        bus = udev_device_get_property_value(u, "ID_BUS");
        if (bus && streq(bus, "ata"))
                return strdup("sata");
        if (udev_device_get_parent_with_subsystem_devtype(u, "usb", NULL))
                return strdup("usb");
        if (udev_device_get_parent_with_subsystem_devtype(u, "scsi", NULL)) {
                /* Without udev's ata_id (fixtures, early boot) the sysfs path still
                 * shows libata's ataN host. */
                const char *sp = udev_device_get_syspath(u);
                return strdup(sp && strstr(sp, "/ata") ? "sata" : "scsi");
        }
        return strdup("unknown");
}

void hw_queues_free(HwQueue *q, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(q[i].cpu_list);
        free(q);
}

int hw_queues_read(const char *disk_syspath, HwQueue **ret, size_t *ret_n) {
        _cleanup_free_ char *mq = path_join(disk_syspath, "mq");
        HwQueue *q = NULL;
        size_t n = 0;
        DIR *dh;
        struct dirent *de;

        assert(disk_syspath);
        assert(ret);
        assert(ret_n);

        if (!mq)
                return -ENOMEM;
        dh = opendir(mq);
        if (!dh)
                return -errno; /* ENOENT: bio-based, no blk-mq queues */
        while ((de = readdir(dh))) {
                unsigned idx;
                char *cpus = NULL, rel[64];
                HwQueue *nq;

                if (safe_atou(de->d_name, &idx) < 0)
                        continue;
                snprintf(rel, sizeof(rel), "%u/cpu_list", idx);
                if (read_attr_at(mq, rel, &cpus) < 0)
                        cpus = NULL; /* absent: an unmapped queue */
                nq = realloc(q, (n + 1) * sizeof(HwQueue));
                if (!nq) {
                        free(cpus);
                        closedir(dh);
                        hw_queues_free(q, n);
                        return -ENOMEM;
                }
                q = nq;
                q[n++] = (HwQueue) { .index = idx, .cpu_list = cpus };
        }
        closedir(dh);
        /* readdir order is arbitrary; keep queues in index order. */
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && q[j - 1].index > q[j].index; j--) {
                        HwQueue t = q[j];
                        q[j] = q[j - 1];
                        q[j - 1] = t;
                }
        *ret = q;
        *ret_n = n;
        return 0;
}

static int read_queues(Device *d) {
        int r = hw_queues_read(d->syspath, &d->queues, &d->n_queues);

        assert(d);

        if (r == -ENOMEM)
                return r;
        d->has_mq = r == 0;
        return 0;
}

static unsigned read_uint_attr(const char *dir, const char *attr) {
        _cleanup_free_ char *v = NULL;
        unsigned u;

        assert(dir);
        assert(attr);

        if (read_attr_at(dir, attr, &v) < 0 || safe_atou(strstrip(v), &u) < 0)
                return 0;
        return u;
}

static int probe(struct udev_device *u, bool quick, Device **ret) {
        TIMING_SCOPE(TIMING_PROBE_UDEV);
        assert(u);
        assert(ret);

        _cleanup_(device_freep) Device *d = NULL;
        struct udev_device *ctrl, *pci, *scsi;
        struct udev_list_entry *e;
        const char *devtype = udev_device_get_devtype(u), *sub = udev_device_get_subsystem(u);
        _cleanup_free_ char *v = NULL;

        if (!sub || !streq(sub, "block") || !devtype || !streq(devtype, "disk"))
                return -ENODEV;

        d = calloc(1, sizeof(Device));
        if (!d)
                return -ENOMEM;
        d->numa_node = -1;
        d->name = strdup(udev_device_get_sysname(u));
        d->syspath = strdup(udev_device_get_syspath(u));
        if (!d->name || !d->syspath)
                return -ENOMEM;
        d->devnode = strdup_or_null(udev_device_get_devnode(u));
        d->transport = detect_transport(u, d->name);
        if (!d->transport)
                return -ENOMEM;

        udev_list_entry_foreach(e, udev_device_get_properties_list_entry(u)) {
                char *kv;
                if (asprintf(&kv, "%s=%s", udev_list_entry_get_name(e), udev_list_entry_get_value(e) ?: "") < 0 ||
                    strv_push(&d->properties, kv) < 0)
                        return -ENOMEM;
        }

        /* Identity: the controller's own strings for NVMe, the SCSI device's for
         * SCSI/SATA, udev's ID_* as the fallback. */
        bool bare = is_bare_virtual(d->syspath);
        ctrl = bare ? NULL : udev_device_get_parent_with_subsystem_devtype(u, "nvme", NULL);
        scsi = bare || ctrl ? NULL : udev_device_get_parent_with_subsystem_devtype(u, "scsi", "scsi_device");
        if (ctrl) {
                int r = quick ? nvme_ctrl_probe_sysfs(ctrl, &d->nvme) : nvme_ctrl_probe(ctrl, &d->nvme);
                if (r < 0)
                        return r;
                d->model = strdup_or_null(d->nvme->model);
                d->serial = strdup_or_null(d->nvme->serial);
                d->firmware = strdup_or_null(d->nvme->firmware);
                d->nqn = strdup_or_null(d->nvme->subsysnqn);
        } else if (scsi) {
                d->model = attr_trimmed(scsi, "model");
                d->firmware = attr_trimmed(scsi, "rev");
        }
        if (!ctrl && !bare) {
                /* A multipath head hangs off its subsystem, which knows the NQN. */
                struct udev_device *nsub = udev_device_get_parent_with_subsystem_devtype(u, "nvme-subsystem", NULL);
                if (nsub)
                        d->nqn = attr_trimmed(nsub, "subsysnqn");
        }
        if (!d->model)
                d->model = prop_dup(u, "ID_MODEL");
        if (!d->serial)
                d->serial = prop_dup(u, "ID_SERIAL_SHORT");
        if (!d->firmware)
                d->firmware = prop_dup(u, "ID_REVISION");
        /* The wwid attribute is a driver's (NVMe namespaces, SCSI disks): a disk of no
         * device (null_blk, loop, zram, dm, md) has none to read. */
        d->wwn = bare ? NULL : attr_trimmed(u, "wwid");
        if (!d->wwn)
                d->wwn = prop_dup(u, "ID_WWN");

        pci = bare ? NULL : udev_device_get_parent_with_subsystem_devtype(u, "pci", NULL);
        if (pci) {
                _cleanup_free_ char *n = attr_trimmed(pci, "numa_node");
                int node;
                if (n && safe_atoi(n, &node) == 0)
                        d->numa_node = node;
        }

        /* The kernel's uevent carries it (block/genhd.c block_uevent); the file for
         * older kernels and trees without it. */
        d->diskseq = prop_dup(u, "DISKSEQ");
        if (!d->diskseq && read_attr_at(d->syspath, "diskseq", &d->diskseq) < 0)
                d->diskseq = NULL;
        if (read_attr_at(d->syspath, "size", &v) == 0) {
                uint64_t sectors;
                /* Always 512-byte units (block/genhd.c); the kernel keeps a size in bytes
                 * within LLONG_MAX, so a count whose byte size would not fit 64 bits is
                 * not a real one: the size stays unknown (0) rather than wrapping. */
                if (safe_atou64(strstrip(v), &sectors) == 0) {
                        if (__builtin_mul_overflow(sectors, UINT64_C(512), &d->size_bytes)) {
                                log_debug("%s: size of %" PRIu64 " sectors overflows, ignored.", esc(d->name), sectors);
                                d->size_bytes = 0;
                        }
                }
        }
        d->rotational = read_uint_attr(d->syspath, "queue/rotational") == 1;
        d->max_hw_sectors_kb = read_uint_attr(d->syspath, "queue/max_hw_sectors_kb");

        if (read_queues(d) < 0)
                return -ENOMEM;
        if (d->has_mq)
                d->nr_tags = read_uint_attr(d->syspath, "mq/0/nr_tags");
        d->io_poll = read_uint_attr(d->syspath, "queue/io_poll") == 1;
        d->multipath_head_name = multipath_head_of(d->name);
        /* drivers/nvme/host/multipath.c: ana_state, on the path disk when the
         * controller reports ANA; absent otherwise. */
        if (d->multipath_head_name && read_attr_at(d->syspath, "ana_state", &d->ana_state) == 0)
                strstrip(d->ana_state);
        else
                d->ana_state = NULL;
        d->multipath_head = !d->has_mq && str_startswith(d->name, "nvme") && !d->multipath_head_name;

        *ret = TAKE_PTR(d);
        return 0;
}

int device_probe(struct udev_device *u, Device **ret) {
        return probe(u, false, ret);
}

int device_probe_quick(struct udev_device *u, Device **ret) {
        return probe(u, true, ret);
}

static int cmp_device(const void *a, const void *b) {
        return strverscmp((*(Device * const *) a)->name, (*(Device * const *) b)->name);
}

int device_enumerate(struct udev *udev, const DiscoveryFilter *f, DeviceList *ret) {
        struct udev_enumerate *en;
        struct udev_list_entry *e;
        DeviceList l = {};
        int r;

        assert(udev);
        assert(f);
        assert(ret);

        en = udev_enumerate_new(udev);
        if (!en)
                return -ENOMEM;
        r = udev_enumerate_add_match_subsystem(en, "block");
        if (r >= 0)
                r = udev_enumerate_add_match_property(en, "DEVTYPE", "disk");
        if (r >= 0)
                r = udev_enumerate_scan_devices(en);
        if (r < 0) {
                udev_enumerate_unref(en);
                return r;
        }

        udev_list_entry_foreach(e, udev_enumerate_get_list_entry(en)) {
                struct udev_device *u = udev_device_new_from_syspath(udev, udev_list_entry_get_name(e));
                Device *d = NULL, **n;

                if (!u)
                        continue; /* went away while we looked */
                if (!device_name_wanted(udev_device_get_sysname(u), f)) {
                        udev_device_unref(u);
                        continue;
                }
                r = device_probe(u, &d);
                udev_device_unref(u);
                if (r == -ENODEV)
                        continue;
                if (r < 0)
                        goto fail;
                n = realloc(l.items, (l.n + 1) * sizeof(Device *));
                if (!n) {
                        device_free(d);
                        r = -ENOMEM;
                        goto fail;
                }
                l.items = n;
                l.items[l.n++] = d;
        }
        udev_enumerate_unref(en);
        if (l.n > 1)
                qsort(l.items, l.n, sizeof(Device *), cmp_device);
        *ret = l;
        return 0;
fail:
        udev_enumerate_unref(en);
        device_list_done(&l);
        return r;
}

int device_lookup(struct udev *udev, const char *name, Device **ret) {
        struct udev_device *u;
        const char *devtype;
        int r;

        assert(udev);
        assert(name);
        assert(ret);

        if (str_startswith(name, "/dev/")) {
                struct stat st;
                if (stat(name, &st) < 0)
                        return negative_errno();
                if (!S_ISBLK(st.st_mode))
                        return -ENOTBLK;
                u = udev_device_new_from_devnum(udev, 'b', st.st_rdev);
        } else {
                if (strchr(name, '/'))
                        return -EINVAL;
                u = udev_device_new_from_subsystem_sysname(udev, "block", name);
        }
        if (!u)
                return -ENODEV;
        devtype = udev_device_get_devtype(u);
        if (devtype && streq(devtype, "partition")) {
                udev_device_unref(u);
                return -EISDIR; /* caller says: partitions share their disk's queue */
        }
        r = device_probe(u, ret);
        udev_device_unref(u);
        return r;
}
