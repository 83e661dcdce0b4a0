/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "irq.h"
#include "util.h"

void irq_table_done(IrqTable *t) {
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

int irq_table_load(const char *path, IrqTable *ret) {
        _cleanup_free_ char *text = NULL;
        IrqTable t = {};
        char *line, *save = NULL;
        int r, ncpu = 0;

        r = read_full_file(path, 16u << 20, &text);
        if (r < 0)
                return r;
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *p = line, *end, *names;
                unsigned long irq;
                IrqName *n;

                while (isspace((unsigned char) *p))
                        p++;
                if (str_startswith(p, "CPU")) {
                        for (char *q = p; (q = strstr(q, "CPU")); q += 3)
                                ncpu++;
                        continue;
                }
                if (!isdigit((unsigned char) *p))
                        continue;
                irq = strtoul(p, &end, 10);
                if (*end != ':')
                        continue;
                p = end + 1;
                for (int c = 0; c < ncpu; c++) { /* skip the per-CPU counts */
                        while (isspace((unsigned char) *p))
                                p++;
                        while (isdigit((unsigned char) *p))
                                p++;
                }
                names = names_of(p);
                if (!names)
                        continue;
                n = realloc(t.items, (t.n + 1) * sizeof(IrqName));
                if (!n) {
                        free(names);
                        irq_table_done(&t);
                        return -ENOMEM;
                }
                t.items = n;
                t.items[t.n++] = (IrqName) { .irq = (unsigned) irq, .name = names };
        }
        *ret = t;
        return 0;
}

const char *irq_table_name(const IrqTable *t, unsigned irq) {
        for (size_t i = 0; i < t->n; i++)
                if (t->items[i].irq == irq)
                        return t->items[i].name;
        return NULL;
}

void irq_classify(const char *name, int *ret_queue, IrqManaged *ret_managed) {
        unsigned a, b;
        int n = 0;

        *ret_queue = -1;
        *ret_managed = IRQ_MANAGED_NO;
        if (!name)
                return;
        /* drivers/nvme/host/pci.c: queue 0 is the admin queue (its vector is a
         * pre_vector, not managed); I/O queue qid serves blk-mq hctx qid-1 and its
         * vector is affinity-managed (pci_alloc_irq_vectors_affinity). */
        if (sscanf(name, "nvme%uq%u%n", &a, &b, &n) == 2 && name[n] == 0) {
                if (b > 0) {
                        *ret_queue = (int) b - 1;
                        *ret_managed = IRQ_MANAGED_PREDICTED;
                }
                return;
        }
        /* drivers/virtio/virtio_pci_common.c: "virtioN-config" is unmanaged, the
         * per-virtqueue "virtioN-req.Q" vectors of virtio-blk are managed. */
        if (sscanf(name, "virtio%u-req.%u%n", &a, &b, &n) == 2 && name[n] == 0) {
                *ret_queue = (int) b;
                *ret_managed = IRQ_MANAGED_PREDICTED;
        }
}

static bool is_pci_address(const char *s) {
        unsigned dom, bus, dev, fn;
        int n = 0;
        return sscanf(s, "%4x:%2x:%2x.%1u%n", &dom, &bus, &dev, &fn, &n) == 4 && s[n] == 0 && strlen(s) == 12;
}

int pci_function_of(const char *syspath, char **ret) {
        _cleanup_free_ char *p = strdup(syspath);
        char *best = NULL, *s;

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
        for (size_t i = 0; i < v->n; i++)
                free(v->items[i].name);
        free(v->items);
        free(v->pci_dir);
        *v = (IrqVectors) {};
}

static int add_vector(IrqVectors *v, unsigned irq, const IrqTable *t) {
        IrqVector *n = realloc(v->items, (v->n + 1) * sizeof(IrqVector));
        const char *name = irq_table_name(t, irq);
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
        IrqVectors v = {};
        _cleanup_free_ char *msi = NULL;
        DIR *dh;
        struct dirent *de;
        int r;

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
                        if (safe_atou(de->d_name, &irq) < 0)
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
                if (read_attr_at(v.pci_dir, "irq", &s) == 0 && safe_atou(strstrip(s), &irq) == 0 && irq > 0 &&
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
