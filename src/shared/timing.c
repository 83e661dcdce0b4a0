/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>
#include <inttypes.h>
#include <time.h>

#include "log.h"
#include "timing.h"
#include "util.h"

#define TIMING_DEPTH 8
#define TIMING_OTHER _TIMING_MAX

uint64_t timing_main_usec;
int timing_log_level = LOG_DEBUG;

static const char *const phase_names[_TIMING_MAX + 1] = {
        [TIMING_CONFIG] = "config",
        [TIMING_ENUMERATE] = "enumerate",
        [TIMING_PROBE_UDEV] = "probe.udev",
        [TIMING_PROBE_NVME] = "probe.nvme",
        [TIMING_PROBE_IRQS] = "probe.irqs",
        [TIMING_PROBE_TOPO] = "probe.topology",
        [TIMING_LOAD] = "load",
        [TIMING_PLAN] = "plan",
        [TIMING_READ] = "reconcile.read",
        [TIMING_WRITE] = "reconcile.write",
        [TIMING_RECORD] = "record",
        [TIMING_IRQBALANCE] = "irqbalance",
        [TIMING_PUBLISH] = "status",
        [TIMING_JOURNAL] = "journal",
        [TIMING_NOTIFY] = "notify",
        [TIMING_OTHER] = "other",
};

/* Per thread: the threads reconcile_devices() starts have no span of their own,
 * so their marks do nothing; the thread that waits for them charges the wait to
 * its phase, and the span's CPU time is the process's, theirs included. */
static _Thread_local struct {
        bool active;
        TimingSpan span;
        unsigned current; /* the phase being timed, TIMING_OTHER outside any */
        unsigned stack[TIMING_DEPTH];
        unsigned depth; /* may exceed TIMING_DEPTH: those levels are not timed apart */
        uint64_t mark;  /* in ticks() */
        uint64_t opened_usec;               /* when the span was opened (CLOCK_MONOTONIC) */
        uint64_t ticks[_TIMING_MAX + 1];    /* each phase's share since then */
} T;

/* The marks' clock. A drift check over 1024 disks makes ~10000 marks; with
 * CLOCK_MONOTONIC each was a system call and an emulated HPET read in a guest
 * without a usable TSC clocksource (the test bed's: an eighth of the check's
 * CPU, measured with perf). x86's time-stamp counter is one instruction there
 * and on hardware: the phases are summed in its ticks and scaled at the end to
 * the span's wall time, read from CLOCK_MONOTONIC, so they still add up to it
 * whatever the counter's rate. Elsewhere the marks read CLOCK_MONOTONIC. */
static inline uint64_t ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
        return __builtin_ia32_rdtsc();
#else
        return now_usec(CLOCK_MONOTONIC);
#endif
}

const char *timing_phase_name(TimingPhase p) {
        return p >= 0 && p <= _TIMING_MAX ? phase_names[p] : NULL;
}

static uint64_t cpu_usec(void) {
        struct timespec ts;

        if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

void timing_begin(uint64_t start_usec, const char *trigger) {
        uint64_t now;

        assert(trigger);

        /* A span whose line would not be logged is not measured: every mark reads
         * the clock, which in a guest without a usable TSC (HPET) is a system call
         * and an emulated device read, about an eighth of a drift check's CPU. */
        T.active = false;
        if (log_get_max_level() < timing_log_level)
                return;
        now = now_usec(CLOCK_MONOTONIC);
        T.active = true;
        T.span = (TimingSpan){};
        snprintf(T.span.trigger, sizeof(T.span.trigger), "%s", trigger);
        T.span.start_usec = start_usec && start_usec <= now ? start_usec : now;
        T.span.cpu_start_usec = cpu_usec();
        T.current = TIMING_OTHER;
        T.depth = 0;
        /* Time before the span was opened (a start's time before main()'s set-up
         * reached the manager) counts as "other". */
        T.span.usec[TIMING_OTHER] = now - T.span.start_usec;
        T.opened_usec = now;
        memset(T.ticks, 0, sizeof(T.ticks));
        T.mark = ticks();
}

bool timing_active(void) {
        return T.active;
}

static void charge(uint64_t now) {
        /* A counter read on another CPU may lag (a thread moved between CPUs whose
         * counters are not in step): nothing is charged rather than a wrap. */
        if (now > T.mark)
                T.ticks[T.current] += now - T.mark;
        T.mark = now;
}

void timing_enter(TimingPhase p) {
        uint64_t now;

        assert(p >= 0 && p < _TIMING_MAX);
        if (!T.active)
                return;
        if (T.depth < TIMING_DEPTH) {
                now = ticks();
                charge(now);
                T.stack[T.depth] = T.current;
                T.current = p;
        }
        T.depth++;
}

void timing_leave(void) {
        if (!T.active || T.depth == 0)
                return;
        T.depth--;
        if (T.depth < TIMING_DEPTH) {
                charge(ticks());
                T.current = T.stack[T.depth];
        }
}

void timing_count_disk(void) {
        if (T.active)
                T.span.disks++;
}

void timing_end(TimingSpan *ret) {
        uint64_t now;

        if (!T.active) {
                if (ret)
                        *ret = (TimingSpan){};
                return;
        }
        now = now_usec(CLOCK_MONOTONIC);
        T.current = T.depth > 0 ? T.stack[0] : T.current; /* a phase left open counts to the end */
        charge(ticks());
        /* The ticks since the span was opened, shared out over the microseconds
         * CLOCK_MONOTONIC saw pass; what rounding leaves goes to "other". */
        uint64_t elapsed = now > T.opened_usec ? now - T.opened_usec : 0, total = 0, given = 0;
        for (unsigned p = 0; p <= _TIMING_MAX; p++)
                total += T.ticks[p];
        for (unsigned p = 0; total && p <= _TIMING_MAX; p++) {
                uint64_t u = (uint64_t) ((unsigned __int128) T.ticks[p] * elapsed / total);
                T.span.usec[p] += u;
                given += u;
        }
        T.span.usec[TIMING_OTHER] += elapsed - given;
        T.span.wall_usec = now - T.span.start_usec;
        T.span.cpu_usec = cpu_usec() - T.span.cpu_start_usec;
        T.active = false;
        if (ret)
                *ret = T.span;
}

int timing_format(const TimingSpan *s, char **ret) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        assert(s);
        assert(ret);

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fprintf(f, "%s: %.1f ms wall, %.1f ms CPU, %u disk%s", s->trigger, s->wall_usec / 1000.0, s->cpu_usec / 1000.0,
                s->disks, s->disks == 1 ? "" : "s");
        const char *sep = "; ";
        for (unsigned p = 0; p <= _TIMING_MAX; p++) {
                if (s->usec[p] < 50)
                        continue;
                fprintf(f, "%s%s %.1f", sep, phase_names[p], s->usec[p] / 1000.0);
                sep = ", ";
        }
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

void timing_end_log(void) {
        _cleanup_free_ char *line = NULL;
        TimingSpan s;

        if (!T.active)
                return;
        timing_end(&s);
        if (log_get_max_level() < timing_log_level || timing_format(&s, &line) < 0)
                return;
        if (log_get_target() != LOG_TARGET_JOURNAL) {
                log_full(timing_log_level, "timing: %s", line);
                return;
        }
        (void) sd_journal_send("MESSAGE=timing: %s", line, "PRIORITY=%i", timing_log_level, "SYSLOG_IDENTIFIER=iotuned",
                               "TIMING_TRIGGER=%s", s.trigger, "TIMING_WALL_USEC=%" PRIu64, s.wall_usec,
                               "TIMING_CPU_USEC=%" PRIu64, s.cpu_usec, "TIMING_DISKS=%u", s.disks, NULL);
}
