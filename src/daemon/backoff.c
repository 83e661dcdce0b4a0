/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "backoff.h"
#include "macro.h"

bool backoff_held(SettingRuntime *rt, uint64_t now) {
        bool held;

        assert(rt);

        held = rt->hold_until_usec > now;
        /* Quiet is counted from the last drift, or from the end of the hold after it:
         * while held, nothing is written, so nothing can be seen reverting it. */
        if (rt->conflict && !held && rt->window_start_usec &&
            now - MAX(rt->window_start_usec, rt->hold_until_usec) > CONFLICT_QUIET_USEC) {
                rt->conflict = false; /* quiet for long enough: episode over */
                rt->backoff_level = 0;
        }
        return held;
}

DriftVerdict backoff_note_drift(SettingRuntime *rt, uint64_t now, uint64_t *ret_hold_usec) {
        uint64_t hold;

        assert(rt);
        assert(ret_hold_usec);

        rt->drifts++;
        if (now - rt->window_start_usec > CONFLICT_WINDOW_USEC || rt->window_start_usec == 0) {
                rt->window_start_usec = now;
                rt->window_drifts = 0;
        }
        rt->window_drifts++;
        *ret_hold_usec = 0;
        if (rt->window_drifts < CONFLICT_DRIFTS)
                return DRIFT_COUNTED;

        hold = BACKOFF_BASE_USEC << MIN(rt->backoff_level, 7u);
        hold = MIN(hold, BACKOFF_MAX_USEC);
        rt->hold_until_usec = now + hold;
        rt->backoff_level++;
        rt->window_drifts = 0;
        rt->window_start_usec = now;
        *ret_hold_usec = hold;
        if (rt->conflict)
                return DRIFT_CONFLICT_HOLDS;
        rt->conflict = true;
        return DRIFT_CONFLICT_BEGINS;
}
