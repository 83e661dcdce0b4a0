/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "blockstat.h"
#include "fileio.h"
#include "macro.h"
#include "util.h"

#define BLOCKSTAT_MAX_FIELDS 17

int blockstat_parse(const char *text, BlockStat *ret) {
        uint64_t f[BLOCKSTAT_MAX_FIELDS];
        size_t n = 0;
        const char *p = text;

        assert(text);
        assert(ret);

        for (;;) {
                p += strspn(p, " \t\n");
                if (!*p)
                        break;
                size_t len = strcspn(p, " \t\n");
                char word[24];
                if (n == BLOCKSTAT_MAX_FIELDS || len >= sizeof(word))
                        return -EBADMSG;
                memcpy(word, p, len);
                word[len] = 0;
                if (safe_atou64(word, &f[n]) < 0)
                        return -EBADMSG;
                n++;
                p += len;
        }
        if (n != 11 && n != 15 && n != 17)
                return -EBADMSG;

        *ret = (BlockStat){
                .ios = {f[0], f[4]},
                .sectors = {f[2], f[6]},
                .ticks_ms = {f[3], f[7]},
                .in_flight = f[8],
                .io_ticks_ms = f[9],
                .time_in_queue_ms = f[10],
        };
        return 0;
}

int blockstat_read(const char *disk_syspath, BlockStat *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        assert(disk_syspath);
        assert(ret);

        path = path_join(disk_syspath, "stat");
        if (!path)
                return -ENOMEM;
        r = read_regular_file(path, 4096, &text);
        if (r < 0)
                return r;
        r = blockstat_parse(text, ret);
        if (r < 0)
                return r;
        ret->sampled_usec = now_usec(CLOCK_MONOTONIC);
        return 0;
}

int blockstat_read_inflight(const char *disk_syspath, unsigned *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        unsigned long long rd, wr;
        char tail;
        int r;

        assert(disk_syspath);
        assert(ret);

        path = path_join(disk_syspath, "inflight");
        if (!path)
                return -ENOMEM;
        r = read_regular_file(path, 4096, &text);
        if (r < 0)
                return r;
        /* "%8u %8u\n" (block/genhd.c part_inflight_show); each at most the tag depth */
        if (sscanf(text, "%llu %llu %c", &rd, &wr, &tail) != 2 || rd > UINT32_MAX / 2 || wr > UINT32_MAX / 2)
                return -EBADMSG;
        *ret = (unsigned) (rd + wr);
        return 0;
}

static bool all_digits(const char *w) {
        return *w && strspn(w, "0123456789") == strlen(w);
}

static int diskstat_cmp(const void *a, const void *b) {
        const DiskStat *x = a, *y = b;
        int c = strcmp(x->name, y->name);

        /* Equal names in the order of the file: the first one counts. */
        return c ? c : (x->line < y->line ? -1 : x->line > y->line);
}

int diskstats_parse(char *text, uint64_t sampled_usec, DiskStats *ret) {
        DiskStat *items = NULL;
        size_t n = 0, cap = 0, lineno = 0;

        assert(text);
        assert(ret);

        for (char *line = text, *next; line && *line; line = next) {
                char *nl = strchr(line, '\n');
                lineno++;
                next = nl ? nl + 1 : NULL;
                if (nl)
                        *nl = 0;
                if (strlen(line) > DISKSTATS_LINE_MAX)
                        continue;
                /* major, minor, name: three words, then the stat fields */
                char *words[3], *p = line;
                size_t w;
                for (w = 0; w < 3; w++) {
                        p += strspn(p, " \t");
                        if (!*p)
                                break;
                        words[w] = p;
                        p += strcspn(p, " \t");
                        if (*p)
                                *p++ = 0;
                }
                if (w < 3 || !all_digits(words[0]) || !all_digits(words[1]) ||
                    strlen(words[2]) >= sizeof(items[0].name))
                        continue;
                BlockStat st;
                if (blockstat_parse(p, &st) < 0)
                        continue;
                if (n == DISKSTATS_ENTRIES_MAX) {
                        free(items);
                        return -E2BIG;
                }
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 64;
                        DiskStat *t = reallocarray(items, ncap, sizeof(*items));
                        if (!t) {
                                free(items);
                                return -ENOMEM;
                        }
                        items = t;
                        cap = ncap;
                }
                st.sampled_usec = sampled_usec;
                items[n].stat = st;
                items[n].line = lineno;
                strcpy(items[n].name, words[2]);
                n++;
        }
        if (n > 1) {
                qsort(items, n, sizeof(*items), diskstat_cmp);
                size_t k = 1;
                for (size_t i = 1; i < n; i++)
                        if (!streq(items[i].name, items[k - 1].name))
                                items[k++] = items[i];
                n = k;
        }
        *ret = (DiskStats){.items = items, .n = n};
        return 0;
}

const BlockStat *diskstats_find(const DiskStats *s, const char *name) {
        size_t lo = 0, hi;

        assert(s);
        assert(name);

        hi = s->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(name, s->items[mid].name);
                if (c == 0)
                        return &s->items[mid].stat;
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return NULL;
}

void diskstats_done(DiskStats *s) {
        if (!s)
                return;
        free(s->items);
        *s = (DiskStats){};
}

int blockstat_load(const BlockStat *a, const BlockStat *b, BlockLoad *ret) {
        assert(a);
        assert(b);
        assert(ret);

        if (b->sampled_usec <= a->sampled_usec || b->ios[0] < a->ios[0] || b->ios[1] < a->ios[1] ||
            b->ticks_ms[0] < a->ticks_ms[0] || b->ticks_ms[1] < a->ticks_ms[1] || b->io_ticks_ms < a->io_ticks_ms ||
            b->time_in_queue_ms < a->time_in_queue_ms)
                return -EINVAL;

        double secs = (double) (b->sampled_usec - a->sampled_usec) / 1e6;
        double ios = (double) (b->ios[0] - a->ios[0] + b->ios[1] - a->ios[1]);
        double ticks = (double) (b->ticks_ms[0] - a->ticks_ms[0] + b->ticks_ms[1] - a->ticks_ms[1]);
        double util = (double) (b->io_ticks_ms - a->io_ticks_ms) / (secs * 1000.0);

        *ret = (BlockLoad){
                .seconds = secs,
                .iops = ios / secs,
                .utilisation = util > 1.0 ? 1.0 : util,
                .queue_depth = (double) (b->time_in_queue_ms - a->time_in_queue_ms) / (secs * 1000.0),
                .await_ms = ios > 0 ? ticks / ios : 0,
        };
        return 0;
}
