/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <stdio.h>

#include "fileio.h"
#include "irq.h"
#include "pcie-link.h"
#include "log.h"
#include "nvme-apply.h"
#include "originals.h"
#include "util.h"

#define ORIGINALS_VERSION 1

static char *record_path(const char *dir, const char *name) {
        char *p = NULL;

        assert(dir);
        assert(name);

        (void) asprintf_safe(&p, "%s/%s.json", dir, name);
        return p;
}

/* A record is read as untrusted input (another process, an earlier version or a
 * person may have left it): not through a link, a regular file, bounded, and every
 * member used is of the type written here. A record that is not one is -EBADMSG:
 * it is reported, never replaced by values read now (they may be tuned ones). */
static bool record_valid(json_object *j) {
        json_object *v;

        assert(j);

        if (!json_object_is_type(j, json_type_object))
                return false;
        if (!json_object_object_get_ex(j, "version", &v) || !json_object_is_type(v, json_type_int) ||
            json_object_get_int64(v) != ORIGINALS_VERSION)
                return false;
        if (!json_object_object_get_ex(j, "device", &v) || !json_object_is_type(v, json_type_string))
                return false;
        if (json_object_object_get_ex(j, "diskseq", &v) && v && !json_object_is_type(v, json_type_string))
                return false;
        if (json_object_object_get_ex(j, "values", &v)) {
                if (!json_object_is_type(v, json_type_object))
                        return false;
                json_object_object_foreach(v, key, val) {
                        (void) key;
                        if (!json_object_is_type(val, json_type_string))
                                return false;
                }
        }
        if (json_object_object_get_ex(j, "irqs", &v)) {
                if (!json_object_is_type(v, json_type_object))
                        return false;
                json_object_object_foreach(v, key, val) {
                        unsigned irq;
                        if (safe_atou(key, &irq) < 0 || irq > IRQ_NUMBER_MAX || !json_object_is_type(val, json_type_string))
                                return false;
                }
        }
        return true;
}

static int load_json(const char *dir, const char *name, json_object **ret) {
        _cleanup_free_ char *p = record_path(dir, name), *text = NULL;
        json_tokener *tok;
        json_object *j;
        size_t end;
        int r;

        assert(dir);
        assert(name);
        assert(ret);

        if (!p)
                return -ENOMEM;
        r = read_regular_file(p, ORIGINALS_RECORD_MAX, &text);
        if (r < 0)
                return r;
        tok = json_tokener_new_ex(8);
        if (!tok)
                return -ENOMEM;
        j = json_tokener_parse_ex(tok, text, -1);
        /* With -1 the terminating NUL may count as parsed: never look past it. */
        end = MIN(json_tokener_get_parse_end(tok), strlen(text));
        if (!j || json_tokener_get_error(tok) != json_tokener_success || text[end + strspn(text + end, " \t\r\n")] ||
            !record_valid(j)) {
                json_tokener_free(tok);
                json_object_put(j);
                return -EBADMSG;
        }
        json_tokener_free(tok);
        *ret = j;
        return 0;
}

const char *originals_strerror(int r) {
        if (r == -EBADMSG)
                return "not a valid originals record (move it away to record the current values afresh)";
        return file_strerror(r);
}

char *originals_record_path(const char *dir, const char *name) {
        assert(dir);
        assert(name);

        return record_path(dir, name);
}

/* <dir>.lock: /run/iotuned/originals.lock beside the records' directory. */
int originals_lock(const char *dir, int *ret_fd) {
        _cleanup_free_ char *path = NULL, *parent = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        char *slash;
        size_t n = strlen(dir);

        assert(dir);
        assert(ret_fd);

        while (n > 1 && dir[n - 1] == '/')
                n--;
        if (asprintf_safe(&path, "%.*s.lock", (int) n, dir) < 0)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
        if (fd < 0 && errno == ENOENT) {
                /* The first lock of a boot: /run/iotuned is made here. */
                int r;
                if (!(parent = strdup(path)))
                        return -ENOMEM;
                slash = strrchr(parent, '/');
                if (!slash || slash == parent)
                        return -ENOENT;
                *slash = 0;
                r = mkdir_p(parent, 0755);
                if (r < 0)
                        return r;
                fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
        }
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        while (flock(fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return negative_errno();
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static bool record_matches(json_object *j, const Device *d) {
        json_object *seq = NULL;
        const char *s;

        assert(j);
        assert(d);

        if (!json_object_object_get_ex(j, "diskseq", &seq) || json_object_is_type(seq, json_type_null))
                return d->diskseq == NULL;
        s = json_object_get_string(seq);
        return d->diskseq && s && streq(s, d->diskseq);
}

static void add_irq_originals(json_object *irqs, const DevicePlan *p, bool *changed) {
        assert(irqs);
        assert(p);
        assert(changed);

        for (size_t i = 0; i < p->n_settings; i++) {
                const Setting *s = &p->settings[i];
                _cleanup_free_ char *raw = NULL, *norm = NULL;
                char key[16];
                if (s->irq < 0 || !s->path)
                        continue;
                snprintf(key, sizeof(key), "%d", s->irq);
                if (json_object_object_get_ex(irqs, key, NULL))
                        continue; /* the first original wins */
                if (read_attr(s->path, &raw) < 0 || s->knob->normalize(raw, &norm) < 0)
                        continue;
                json_object_object_add(irqs, key, json_object_new_string(norm));
                *changed = true;
        }
}

/* Rows read outside the disk's queue directory: the controller rows (APST,
 * coalescing) and the ASPM row of its PCIe link planned on this disk, their values
 * before the first write. Module-wide queue counts are not runtime values: the
 * drop-in that holds them is removed by `iotunectl restore`. A link without the
 * files has nothing to restore. */
static int read_shared_row(const DevicePlan *p, const Setting *s, char **ret_raw) {
        switch (s->knob->scope) {
        case KNOB_SCOPE_CTRL:
                return p->device->nvme ? nvme_row_read(p->device->nvme, s->knob, ret_raw, NULL) : -ENODEV;
        case KNOB_SCOPE_LINK:
                return s->path ? pcie_link_read(s->path, ret_raw, NULL) : -ENODEV;
        default:
                return -EOPNOTSUPP;
        }
}

static void add_shared_originals(json_object *values, const DevicePlan *p, bool *changed) {
        assert(values);
        assert(p);
        assert(changed);

        for (size_t i = 0; i < p->n_settings; i++) {
                const Setting *s = &p->settings[i];
                _cleanup_free_ char *raw = NULL, *norm = NULL;
                if (s->knob->scope != KNOB_SCOPE_CTRL && s->knob->scope != KNOB_SCOPE_LINK)
                        continue;
                if (json_object_object_get_ex(values, s->knob->name, NULL))
                        continue; /* the first original wins */
                if (read_shared_row(p, s, &raw) < 0 || s->knob->normalize(raw, &norm) < 0)
                        continue;
                json_object_object_add(values, s->knob->name, json_object_new_string(norm));
                *changed = true;
        }
}

/* Is queue knob `kn` one this plan's writes can change: a row it plans, or one
 * the kernel resets when a planned row is written (the scheduler switch resets
 * nr_requests: block/elevator.c; since 6.11 a queue-limits update, the read-ahead:
 * knob_resets())? A switch to or from bfq also turns writeback
 * throttling off and on (bfq-iosched.c), so a planned scheduler brings
 * wbt_lat_usec along. Only these are recorded: reading every queue knob of
 * every disk cost a read per knob at each hot-add and another at each restore,
 * for values nothing would ever put back. */
static bool queue_row_touched(const DevicePlan *p, const Knob *kn) {
        assert(p);
        assert(kn);

        for (size_t i = 0; i < p->n_settings; i++) {
                const Knob *w = p->settings[i].knob;
                if (w->scope != KNOB_SCOPE_QUEUE || !p->settings[i].desired)
                        continue;
                if (w == kn || (knob_resets(w) & KNOB_MASK(kn->id)) ||
                    (w->id == KNOB_SCHEDULER && kn->id == KNOB_WBT_LAT_USEC))
                        return true;
        }
        return false;
}

/* The queue rows of the plan not recorded yet, their values now: a row planned
 * for the first time after a reload has not been written by us, so what it
 * holds is its original. The first original of each wins. */
static void add_queue_originals(json_object *values, const DevicePlan *p, const char *const read_now[_KNOB_MAX],
                                bool *changed) {
        const Device *d = p->device;

        assert(values);
        assert(changed);

        for (size_t k = 0; k < _KNOB_MAX; k++) {
                const Knob *kn = &knob_table[k];
                _cleanup_free_ char *norm = NULL;
                if (kn->scope != KNOB_SCOPE_QUEUE || (kn->needs_mq && !d->has_mq) || !queue_row_touched(p, kn))
                        continue;
                if (json_object_object_get_ex(values, kn->name, NULL))
                        continue;
                /* A row the caller read a moment ago, before any write, is not read
                 * twice. Unreadable knobs (no WBT on this queue, old kernels) have
                 * nothing to restore. */
                if (read_now && read_now[k])
                        json_object_object_add(values, kn->name, json_object_new_string(read_now[k]));
                else if (knob_read_queue(kn, d->syspath, &norm) >= 0)
                        json_object_object_add(values, kn->name, json_object_new_string(norm));
                else
                        continue;
                *changed = true;
        }
}

static int write_record(const char *dir, const char *name, json_object *root) {
        _cleanup_free_ char *p = record_path(dir, name);
        const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);

        assert(dir);
        assert(name);
        assert(root);

        return p && text ? write_file_atomic_full(p, text, strlen(text), WRITE_FILE_EXCL_TEMP) : -ENOMEM;
}

int originals_record(const char *dir, const DevicePlan *plan) {
        _cleanup_close_ int lock = -1;
        int r;

        assert(dir);
        assert(plan);

        /* Held across the whole check-read-write: of two writers (the daemon and an
         * `iotunectl apply`), the second sees the first one's record and keeps it,
         * instead of recording values the first has already tuned. */
        r = originals_lock(dir, &lock);
        if (r < 0)
                return r;
        return originals_record_locked(dir, plan, NULL);
}

int originals_record_locked(const char *dir, const DevicePlan *plan, const char *const read_now[_KNOB_MAX]) {
        const Device *d = plan->device;
        json_object *old = NULL, *root, *values, *irqs;
        bool changed = false;
        int r;

        assert(dir);
        assert(plan);

        r = load_json(dir, d->name, &old);
        if (r < 0 && r != -ENOENT)
                return r; /* unreadable or corrupt: its originals are unknown, nothing is written */
        if (r == 0) {
                if (record_matches(old, d)) {
                        /* Known disk: only rows and vectors not recorded yet are added. */
                        if (!json_object_object_get_ex(old, "irqs", &irqs)) {
                                irqs = json_object_new_object();
                                json_object_object_add(old, "irqs", irqs);
                        }
                        add_irq_originals(irqs, plan, &changed);
                        if (json_object_object_get_ex(old, "values", &values) &&
                            json_object_is_type(values, json_type_object)) {
                                add_queue_originals(values, plan, read_now, &changed);
                                add_shared_originals(values, plan, &changed);
                        }
                        r = changed ? write_record(dir, d->name, old) : 0;
                        json_object_put(old);
                        return r;
                }
                json_object_put(old); /* a different disk had this name: start over */
        }

        root = json_object_new_object();
        values = json_object_new_object();
        irqs = json_object_new_object();
        if (!root || !values || !irqs) {
                json_object_put(root);
                json_object_put(values);
                json_object_put(irqs);
                return -ENOMEM;
        }
        json_object_object_add(root, "version", json_object_new_int(ORIGINALS_VERSION));
        json_object_object_add(root, "device", json_object_new_string(d->name));
        json_object_object_add(root, "syspath", json_object_new_string(d->syspath));
        json_object_object_add(root, "diskseq", d->diskseq ? json_object_new_string(d->diskseq) : NULL);
        json_object_object_add(root, "recorded_realtime", json_object_new_int64((int64_t) time(NULL)));
        add_queue_originals(values, plan, read_now, &changed);
        add_shared_originals(values, plan, &changed);
        json_object_object_add(root, "values", values);
        add_irq_originals(irqs, plan, &changed);
        json_object_object_add(root, "irqs", irqs);
        r = write_record(dir, d->name, root);
        json_object_put(root);
        return r;
}

int originals_load(const char *dir, const Device *d, char *values[_KNOB_MAX], char ***ret_irqs) {
        _cleanup_strv_free_ char **irq_values = NULL;
        json_object *j = NULL, *vals, *irqs;
        int r;

        assert(dir);
        assert(d);
        assert(values);

        for (size_t k = 0; k < _KNOB_MAX; k++)
                values[k] = NULL;
        r = load_json(dir, d->name, &j);
        if (r < 0)
                return r;
        if (!record_matches(j, d)) {
                json_object_put(j);
                return -ESTALE;
        }
        if (json_object_object_get_ex(j, "values", &vals) && json_object_is_type(vals, json_type_object))
                for (size_t k = 0; k < _KNOB_MAX; k++) {
                        json_object *v;
                        if (!json_object_object_get_ex(vals, knob_table[k].name, &v))
                                continue;
                        values[k] = strdup(json_object_get_string(v));
                        if (!values[k])
                                goto oom;
                }
        if (json_object_object_get_ex(j, "irqs", &irqs) && json_object_is_type(irqs, json_type_object)) {
                json_object_object_foreach(irqs, key, val) {
                        char *e = NULL;
                        if (asprintf_safe(&e, "%s=%s", key, json_object_get_string(val)) < 0 ||
                            strv_push(&irq_values, e) < 0)
                                goto oom;
                }
        }
        json_object_put(j);
        if (ret_irqs)
                *ret_irqs = TAKE_PTR(irq_values);
        return 0;
oom:
        for (size_t i = 0; i < _KNOB_MAX; i++) {
                free(values[i]);
                values[i] = NULL;
        }
        json_object_put(j);
        return -ENOMEM;
}

int originals_list(const char *dir, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        DIR *dh = opendir(dir);
        struct dirent *de;

        assert(dir);
        assert(ret);

        if (!dh) {
                if (errno == ENOENT) {
                        *ret = NULL;
                        return 0;
                }
                return negative_errno();
        }
        while ((de = readdir(dh))) {
                if (de->d_name[0] == '.' || !str_endswith(de->d_name, ".json"))
                        continue;
                char *n = strndup(de->d_name, strlen(de->d_name) - strlen(".json"));
                if (!n || strv_push(&l, n) < 0) {
                        closedir(dh);
                        return -ENOMEM;
                }
        }
        closedir(dh);
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

int originals_forget_locked(const char *dir, const char *name) {
        _cleanup_free_ char *p = record_path(dir, name);

        assert(dir);
        assert(name);

        if (!p)
                return -ENOMEM;
        if (unlink(p) < 0 && errno != ENOENT)
                return negative_errno();
        return 0;
}

int originals_forget(const char *dir, const char *name) {
        _cleanup_close_ int lock = -1;
        int r;

        assert(dir);
        assert(name);

        r = originals_lock(dir, &lock);
        if (r < 0)
                return r;
        return originals_forget_locked(dir, name);
}

int originals_remove_temporaries(const char *dir) {
        _cleanup_close_ int lock = -1;
        struct dirent *de;
        unsigned n = 0;
        DIR *dh;
        int r;

        assert(dir);

        /* Every record is written under the lock: holding it, no write is under way,
         * and a "NAME.json.tmp.*" is what a writer killed before its rename left. */
        r = originals_lock(dir, &lock);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        dh = opendir(dir);
        if (!dh)
                return errno == ENOENT ? 0 : negative_errno();
        while ((de = readdir(dh))) {
                if (de->d_name[0] == '.' || !strstr(de->d_name, ".json.tmp."))
                        continue;
                if (unlinkat(dirfd(dh), de->d_name, 0) >= 0)
                        n++;
                else if (errno != ENOENT)
                        log_debug_errno(errno, "Cannot remove %s/%s: %m", dir, de->d_name);
        }
        closedir(dh);
        return (int) n;
}

