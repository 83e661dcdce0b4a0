/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A hold: `iotunectl tune` measures a disk under values that are not its plan's,
 * and the daemon must not put the plan back meanwhile. The holder writes
 * <dir>/<disk> (dir: IOTUNED_RUN_DIR "/hold") with its pid and a deadline,
 * renews it while it runs and removes it when it is done; the daemon leaves a
 * held disk alone until the file is gone, the deadline has passed or the
 * holder has exited, so a killed `tune` holds a disk for minutes at most. */

/* A deadline further ahead than this is not honoured (a damaged or hostile
 * file must not switch the daemon off for a disk). */
#define HOLD_MAX_USEC (2ULL * 3600ULL * 1000000ULL)

typedef struct Hold {
        pid_t pid;
        uint64_t until_usec; /* CLOCK_REALTIME */
} Hold;

/* Write or renew the hold of `disk` (a kernel name) until `until_usec`. */
int hold_acquire(const char *dir, const char *disk, pid_t pid, uint64_t until_usec);
/* Remove it; 0 also when there was none. */
int hold_release(const char *dir, const char *disk);

/* Parse a hold file's text: "pid=N" and "until_usec=N" lines, '#' comments.
 * -EBADMSG when a line is anything else or one of the two is missing. */
int hold_parse(const char *text, Hold *ret);

/* Whether `disk` is held at `now_usec` (CLOCK_REALTIME): 1 (with *ret filled
 * when not NULL), 0 when there is no file, its deadline has passed or its
 * holder is gone; -errno for a file that cannot be trusted (not a regular file,
 * too large, unparsable, a deadline beyond HOLD_MAX_USEC): not honoured. */
int hold_check(const char *dir, const char *disk, uint64_t now_usec, Hold *ret);

/* Whether `dir` holds any entry at all (false when it does not exist): one
 * directory read, so that a drift check over many disks asks hold_check() only
 * when some disk may be held. True when it cannot tell. */
bool hold_any(const char *dir);
