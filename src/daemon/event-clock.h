/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "util.h"

/* The time of the event being handled (sd_event_now(): the loop's wake-up, the
 * same for every disk of one batch or drift check); before the loop first runs,
 * the current time. Durations measured within one handler use now_usec(). */
static inline uint64_t event_now(sd_event *event, clockid_t clock) {
        uint64_t usec;

        if (sd_event_now(event, clock, &usec) < 0)
                usec = now_usec(clock);
        return usec;
}
