/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <string.h>

#include "cpuset.h"
#include "nvme-feature.h"
#include "util.h"

uint32_t nvme_coalescing_to_cdw11(const NvmeCoalescing *c) {
        uint32_t thr = c->threshold ? c->threshold - 1 : 0, time = c->time_us / NVME_COALESCING_TIME_UNIT_US;

        assert(c);

        return NVME_SET(thr, FEAT_IRQC_THR) | NVME_SET(time, FEAT_IRQC_TIME);
}

void nvme_coalescing_from_dw(uint32_t dw, NvmeCoalescing *ret) {
        assert(ret);

        ret->threshold = NVME_GET(dw, FEAT_IRQC_THR) + 1;
        ret->time_us = NVME_GET(dw, FEAT_IRQC_TIME) * NVME_COALESCING_TIME_UNIT_US;
}

int nvme_coalescing_parse(const char *s, NvmeCoalescing *ret) {
        NvmeCoalescing c = { .threshold = 1, .time_us = 0 };
        bool seen_thr = false, seen_time = false;
        _cleanup_free_ char *copy = NULL;
        char *save = NULL;

        assert(s);
        assert(ret);

        if (streq(s, "off")) {
                *ret = c;
                return 0;
        }
        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(strstrip(tok), '=');
                unsigned v;
                if (!eq)
                        return -EINVAL;
                *eq = 0;
                if (safe_atou(strstrip(eq + 1), &v) < 0)
                        return -EINVAL;
                strstrip(tok);
                if (streq(tok, "threshold") && !seen_thr) {
                        if (v < 1 || v > NVME_COALESCING_THRESHOLD_MAX)
                                return -ERANGE;
                        c.threshold = v;
                        seen_thr = true;
                } else if (streq(tok, "time_us") && !seen_time) {
                        if (v > NVME_COALESCING_TIME_MAX_US || v % NVME_COALESCING_TIME_UNIT_US)
                                return -ERANGE;
                        c.time_us = v;
                        seen_time = true;
                } else
                        return -EINVAL;
        }
        if (!seen_thr && !seen_time)
                return -EINVAL;
        *ret = c;
        return 0;
}

int nvme_coalescing_format(const NvmeCoalescing *c, char **ret) {
        assert(c);
        assert(ret);

        if (nvme_coalescing_to_cdw11(c) == 0)
                return (*ret = strdup("off")) ? 0 : -ENOMEM;
        return asprintf_safe(ret, "threshold=%u,time_us=%u", c->threshold, c->time_us);
}

uint32_t nvme_apst_to_cdw11(bool enable) {
        return NVME_SET(enable ? 1u : 0u, FEAT_APST_APSTE);
}

bool nvme_apst_from_dw(uint32_t dw) {
        return NVME_GET(dw, FEAT_APST_APSTE);
}

int nvme_queue_map_from_queues(const HwQueue *q, size_t n, bool io_poll, NvmeQueueMap *ret) {
        CpuSet all = {}, seen = {};
        unsigned sizes[4] = {}, maps = 0, in_map = 0;
        int r = 0;

        assert(ret);

        *ret = (NvmeQueueMap) {};
        for (size_t i = 0; i < n; i++) {
                CpuSet s = {};
                if (!q[i].cpu_list || cpuset_parse(q[i].cpu_list, &s) < 0) {
                        cpuset_done(&s);
                        goto unknown;
                }
                r = cpuset_or(&all, &s);
                cpuset_done(&s);
                if (r < 0)
                        goto out;
        }
        for (size_t i = 0; i < n; i++) {
                CpuSet s = {};
                if (cpuset_parse(q[i].cpu_list, &s) < 0 || cpuset_intersects(&seen, &s)) {
                        cpuset_done(&s);
                        goto unknown; /* a CPU twice within one map: not the layout we know */
                }
                r = cpuset_or(&seen, &s);
                cpuset_done(&s);
                if (r < 0)
                        goto out;
                in_map++;
                if (cpuset_equal(&seen, &all)) {
                        if (maps == ELEMENTSOF(sizes))
                                goto unknown;
                        sizes[maps++] = in_map;
                        in_map = 0;
                        cpuset_done(&seen);
                }
        }
        if (in_map || maps == 0 || maps > 3 || (maps == 3 && !io_poll))
                goto unknown;
        ret->known = true;
        ret->n_default = sizes[0];
        if (maps == 3) {
                ret->n_read = sizes[1];
                ret->n_poll = sizes[2];
        } else if (maps == 2) {
                if (io_poll)
                        ret->n_poll = sizes[1];
                else
                        ret->n_read = sizes[1];
        }
        goto out;
unknown:
        *ret = (NvmeQueueMap) {};
out:
        cpuset_done(&all);
        cpuset_done(&seen);
        return r;
}

unsigned nvme_queue_map_write_queues(const NvmeQueueMap *m) {
        assert(m);

        return m->n_read ? m->n_default : 0;
}

unsigned nvme_queue_map_poll_queues(const NvmeQueueMap *m) {
        assert(m);

        return m->n_poll;
}

unsigned nvme_queue_map_io_queue_depth(const NvmeQueueMap *m) {
        assert(m);

        return m->nr_tags ? m->nr_tags + 1 : 0;
}
