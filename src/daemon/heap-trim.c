/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The heap handed back to the kernel after many disks were handled: at once
 * after a start, a reload or a drift check, once a burst's events stop
 * otherwise. */
#include <assert.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "heap-trim.h"
#include "util.h"

struct HeapTrimmer {
        sd_event *event;
        sd_event_source *source;         /* time: the heap trimmed once a burst's events stop */
        size_t disks;                    /* disks handled by events since the last trim */
};

int heap_trimmer_new(sd_event *event, HeapTrimmer **ret) {
        HeapTrimmer *t;

        assert(event);
        assert(ret);

        t = calloc(1, sizeof(HeapTrimmer));
        if (!t)
                return -ENOMEM;
        t->event = sd_event_ref(event);
        *ret = t;
        return 0;
}

HeapTrimmer *heap_trimmer_free(HeapTrimmer *t) {
        if (!t)
                return NULL;
        sd_event_source_disable_unref(t->source);
        sd_event_unref(t->event);
        free(t);
        return NULL;
}

void heap_trim(size_t disks) {
        if (disks >= TRIM_AFTER_DISKS)
                (void) malloc_trim(0);
}

static int on_trim(sd_event_source *s, uint64_t usec, void *userdata) {
        HeapTrimmer *t = userdata;

        assert(t);

        heap_trim(t->disks);
        t->disks = 0;
        return 0;
}

void heap_trimmer_later(HeapTrimmer *t, size_t disks) {
        uint64_t when;
        int r;

        assert(t);

        t->disks += disks;
        if (t->disks < TRIM_AFTER_DISKS)
                return; /* nothing armed: a single hot-add costs no wake-up */
        when = now_usec(CLOCK_MONOTONIC) + TRIM_QUIET_USEC;
        if (t->source) {
                r = sd_event_source_set_time(t->source, when);
                if (r >= 0)
                        r = sd_event_source_set_enabled(t->source, SD_EVENT_ONESHOT);
        } else {
                r = sd_event_add_time(t->event, &t->source, CLOCK_MONOTONIC, when, USEC_PER_SEC / 10, on_trim, t);
                if (r >= 0)
                        (void) sd_event_source_set_description(t->source, "trim");
        }
        if (r < 0) {
                /* No timer: trimmed now, as before. */
                heap_trim(t->disks);
                t->disks = 0;
        }
}
