/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "irq.h"
#include "timing.h"
#include "log.h"
#include "util.h"

void irq_table_done(IrqTable *t) {
        assert(t);

        for (size_t i = 0; i < t->n; i++)
                free(t->items[i].name);
        free(t->items);
        *t = (IrqTable) {};
}

/* The columns after the per-CPU counts are "<chip> <hwirq>-<type> <names>", e.g.
 * "PCI-MSIX-0000:00:04.0   1-edge      nvme0q1" or "IO-APIC 4-edge ttyS0". The names
 * follow the first token that ends in a trigger type. */
static char *names_of(char *rest) {
        char *save = NULL, *tok;

        assert(rest);

        for (tok = strtok_r(rest, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
                if (str_endswith(tok, "edge") || str_endswith(tok, "level") || streq(tok, "fasteoi") ||
                    str_endswith(tok, "-eoi")) {
                        char *n = save;
                        while (n && isspace((unsigned char) *n))
                                n++;
                        return isempty(n) ? NULL : strstrip(strdup(n));
                }
        return NULL;
}

/* A decimal number of at most `max`, with no sign, no spaces, no leading zeros
 * beyond "0": the digits at *p, which is moved past them. -ERANGE above max,
 * -EINVAL when there is no digit. */
static int parse_bounded(const char **p, unsigned max, unsigned *ret) {
        const char *s = *p;
        uint64_t v = 0;

        assert(p);
        assert(ret);

        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        if (s[0] == '0' && isdigit((unsigned char) s[1]))
                return -EINVAL;
        for (; isdigit((unsigned char) *s); s++) {
                v = v * 10 + (uint64_t) (*s - '0');
                if (v > max) {
                        while (isdigit((unsigned char) *s))
                                s++;
                        *p = s;
                        return -ERANGE;
                }
        }
        *p = s;
        *ret = (unsigned) v;
        return 0;
}

static int cmp_irq_name(const void *a, const void *b) {
        const IrqName *x = a, *y = b;
        return x->irq < y->irq ? -1 : x->irq > y->irq;
}

int irq_table_parse(char *text, IrqTable *ret) {
        IrqTable t = {};
        size_t allocated = 0;
        char *line, *next;
        int ncpu = -1;

        assert(text);
        assert(ret);

        for (line = text; line && *line; line = next) {
                char *p = line, *names;
                const char *q;
                unsigned irq;
                size_t len;
                int r;

                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                len = next ? (size_t) (next - line - 1) : strlen(line);
                if (len > IRQ_TABLE_LINE_MAX) {
                        log_debug("/proc/interrupts: a line of %zu bytes, skipped.", len);
                        continue;
                }
                while (isspace((unsigned char) *p))
                        p++;
                if (str_startswith(p, "CPU")) {
                        /* The header: one "CPUn" per online CPU (kernel/irq/proc.c show_interrupts). */
                        if (ncpu >= 0) {
                                log_debug("/proc/interrupts: a second CPU header, skipped.");
                                continue;
                        }
                        ncpu = 0;
                        for (char *c = p; (c = strstr(c, "CPU")); c += 3)
                                if (++ncpu > IRQ_TABLE_CPU_MAX) {
                                        log_debug("/proc/interrupts: more than %d CPUs in the header.",
                                                  IRQ_TABLE_CPU_MAX);
                                        irq_table_done(&t);
                                        return -E2BIG;
                                }
                        continue;
                }
                if (!isdigit((unsigned char) *p))
                        continue;
                q = p;
                r = parse_bounded(&q, IRQ_NUMBER_MAX, &irq);
                if (r < 0 || *q != ':') {
                        if (r == -ERANGE)
                                log_debug("/proc/interrupts: IRQ number above %u, row skipped.", IRQ_NUMBER_MAX);
                        continue;
                }
                p = (char *) q + 1;
                /* Skip the per-CPU counts: at most one per CPU, and no further than the
                 * first token that is not a count, so a row costs its own length. */
                for (int c = 0; c < ncpu; c++) {
                        char *c_end = p;
                        while (isspace((unsigned char) *c_end))
                                c_end++;
                        if (!isdigit((unsigned char) *c_end))
                                break;
                        while (isdigit((unsigned char) *c_end))
                                c_end++;
                        p = c_end;
                }
                names = names_of(p);
                if (!names)
                        continue;
                if (t.n == allocated) {
                        size_t want = MAX(allocated * 2, (size_t) 64);
                        IrqName *n = reallocarray(t.items, want, sizeof(IrqName));
                        if (!n) {
                                free(names);
                                irq_table_done(&t);
                                return -ENOMEM;
                        }
                        t.items = n;
                        allocated = want;
                }
                t.items[t.n++] = (IrqName) { .irq = irq, .name = names };
        }
        if (t.n > 1) {
                /* Sorted for lookups; of two rows for one IRQ the first is kept. */
                size_t w = 1;
                for (size_t i = 0; i < t.n; i++)
                        t.items[i].order = i;
                qsort(t.items, t.n, sizeof(IrqName), cmp_irq_name);
                for (size_t i = 1; i < t.n; i++) {
                        if (t.items[i].irq == t.items[w - 1].irq) {
                                log_debug("/proc/interrupts: IRQ %u listed twice, the later row skipped.",
                                          t.items[i].irq);
                                if (t.items[i].order < t.items[w - 1].order) {
                                        free(t.items[w - 1].name);
                                        t.items[w - 1] = t.items[i];
                                } else
                                        free(t.items[i].name);
                                continue;
                        }
                        t.items[w++] = t.items[i];
                }
                t.n = w;
        }
        *ret = t;
        return 0;
}

int irq_table_load(const char *path, IrqTable *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        assert(path);
        assert(ret);

        r = read_full_file(path, IRQ_TABLE_FILE_MAX, &text);
        if (r < 0)
                return r;
        return irq_table_parse(text, ret);
}

const char *irq_table_name(const IrqTable *t, unsigned irq) {
        IrqName key = { .irq = irq };
        const IrqName *n;

        assert(t);

        if (t->n == 0)
                return NULL;
        n = bsearch(&key, t->items, t->n, sizeof(IrqName), cmp_irq_name);
        return n ? n->name : NULL;
}

/* "<prefix><number>" at s: the number (at most max), and where it ends. */
static bool prefixed_number(const char *s, const char *prefix, unsigned max, unsigned *ret, const char **ret_end) {
        assert(s);
        assert(prefix);
        assert(ret);
        assert(ret_end);

        if (!str_startswith(s, prefix))
                return false;
        s += strlen(prefix);
        if (parse_bounded(&s, max, ret) < 0)
                return false;
        *ret_end = s;
        return true;
}

void irq_classify(const char *name, int *ret_queue, IrqManaged *ret_managed) {
        const char *e;
        unsigned a, b;

        assert(ret_queue);
        assert(ret_managed);

        *ret_queue = -1;
        *ret_managed = IRQ_MANAGED_NO;
        if (!name)
                return;
        /* drivers/nvme/host/pci.c: queue 0 is the admin queue (its vector is a
         * pre_vector, not managed); I/O queue qid serves blk-mq hctx qid-1 and its
         * vector is affinity-managed (pci_alloc_irq_vectors_affinity). qid is at
         * most 65535 (a 16-bit queue identifier in the NVMe spec). */
        if (prefixed_number(name, "nvme", UINT16_MAX, &a, &e) && prefixed_number(e, "q", UINT16_MAX, &b, &e) &&
            *e == 0) {
                if (b > 0) {
                        *ret_queue = (int) b - 1;
                        *ret_managed = IRQ_MANAGED_PREDICTED;
                }
                return;
        }
        /* drivers/virtio/virtio_pci_common.c: "virtioN-config" is unmanaged, the
         * per-virtqueue "virtioN-req.Q" vectors of virtio-blk are managed. */
        if (prefixed_number(name, "virtio", INT32_MAX, &a, &e) && prefixed_number(e, "-req.", UINT16_MAX, &b, &e) &&
            *e == 0) {
                *ret_queue = (int) b;
                *ret_managed = IRQ_MANAGED_PREDICTED;
        }
}

static bool is_pci_address(const char *s) {
        unsigned dom, bus, dev, fn;
        int n = 0;

        assert(s);

        return sscanf(s, "%4x:%2x:%2x.%1u%n", &dom, &bus, &dev, &fn, &n) == 4 && s[n] == 0 && strlen(s) == 12;
}

int pci_function_of(const char *syspath, char **ret) {
        _cleanup_free_ char *p = strdup(syspath);
        char *best = NULL, *s;

        assert(syspath);
        assert(ret);

        if (!p)
                return -ENOMEM;
        for (s = p; (s = strchr(s, '/')); s++) {
                char *next = strchr(s + 1, '/'), saved = 0;
                if (next) {
                        saved = *next;
                        *next = 0;
                }
                if (is_pci_address(s + 1))
                        best = next ? next : s + strlen(s);
                if (next)
                        *next = saved;
        }
        if (!best)
                return -ENODEV;
        *ret = strndup(p, best - p);
        return *ret ? 0 : -ENOMEM;
}

void irq_vectors_done(IrqVectors *v) {
        assert(v);

        for (size_t i = 0; i < v->n; i++)
                free(v->items[i].name);
        free(v->items);
        free(v->pci_dir);
        *v = (IrqVectors) {};
}

static int add_vector(IrqVectors *v, unsigned irq, const IrqTable *t) {
        IrqVector *n = realloc(v->items, (v->n + 1) * sizeof(IrqVector));
        const char *name = irq_table_name(t, irq);

        assert(v);
        assert(t);

        if (!n)
                return -ENOMEM;
        v->items = n;
        n = &v->items[v->n];
        *n = (IrqVector) { .irq = irq, .name = strdup_or_null(name) };
        if (name && !n->name)
                return -ENOMEM;
        irq_classify(name, &n->queue, &n->managed);
        v->n++;
        return 0;
}

static int cmp_vector(const void *a, const void *b) {
        const IrqVector *x = a, *y = b;
        return x->irq < y->irq ? -1 : x->irq > y->irq;
}

int device_irq_vectors(const Device *d, const IrqTable *t, IrqVectors *ret) {
        TIMING_SCOPE(TIMING_PROBE_IRQS);
        IrqVectors v = {};
        _cleanup_free_ char *msi = NULL;
        DIR *dh;
        struct dirent *de;
        int r;

        assert(d);
        assert(t);
        assert(ret);

        r = pci_function_of(d->syspath, &v.pci_dir);
        if (r == -ENODEV) {
                *ret = v; /* no PCI function: no IRQs known */
                return 0;
        }
        if (r < 0)
                return r;
        msi = path_join(v.pci_dir, "msi_irqs");
        if (!msi) {
                irq_vectors_done(&v);
                return -ENOMEM;
        }
        dh = opendir(msi);
        if (dh) {
                while ((de = readdir(dh))) {
                        unsigned irq;
                        if (safe_atou(de->d_name, &irq) < 0 || irq > IRQ_NUMBER_MAX)
                                continue;
                        r = add_vector(&v, irq, t);
                        if (r < 0) {
                                closedir(dh);
                                irq_vectors_done(&v);
                                return r;
                        }
                }
                closedir(dh);
        }
        if (v.n == 0) {
                /* Legacy INTx: the function's one `irq` (0 = none). */
                _cleanup_free_ char *s = NULL;
                unsigned irq;
                if (read_attr_at(v.pci_dir, "irq", &s) == 0 && safe_atou(strstrip(s), &irq) == 0 && irq > 0 && irq <= IRQ_NUMBER_MAX &&
                    (r = add_vector(&v, irq, t)) < 0) {
                        irq_vectors_done(&v);
                        return r;
                }
        }
        if (v.n > 1)
                qsort(v.items, v.n, sizeof(IrqVector), cmp_vector);
        *ret = v;
        return 0;
}
