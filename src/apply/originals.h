/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "device.h"
#include "knob.h"
#include "plan.h"

/* Original values, recorded under /run/iotuned/originals/<disk>.json before the
 * first write to a disk, so `iotunectl restore` (and the daemon on stop) can put
 * them back even after a crash. /run is tmpfs: a reboot forgets them, as it
 * forgets the tuning. The disk's diskseq guards against a different disk that
 * later gets the same name. */

/* Record the current values of the queue knobs the plan's writes can change (the
 * rows it plans, and those the kernel resets when one of them is written) and of
 * each vector and controller or link row it plans, unless already recorded for
 * this very disk: the first original wins, and rows and vectors planned later
 * (after a reload) are added. */
int originals_record(const char *dir, const DevicePlan *p);
/* Errors: -EBADMSG for a record that is not a valid one, and what reading it
 * (-ELOOP for a link, -EBADFD for a FIFO, -EFBIG), locking or writing returned. */

/* values[k] = recorded value or NULL; *ret_irqs = "IRQ=cpulist" strings (may be
 * NULL). -ENOENT if there is no record; -ESTALE if the record belongs to an
 * earlier disk of the same name; -EBADMSG if it is not a valid record. */
int originals_load(const char *dir, const Device *d, char *values[_KNOB_MAX], char ***ret_irqs);

/* Kernel names that have a record, sorted. */
int originals_list(const char *dir, char ***ret);

int originals_forget(const char *dir, const char *name);

/* The largest record read back (a few KiB for a disk with hundreds of vectors). */
#define ORIGINALS_RECORD_MAX (1u << 20)

/* Take the exclusive lock every read-modify-write of the records holds:
 * flock(2) on <dir>.lock (/run/iotuned/originals.lock), created 0600 with
 * O_NOFOLLOW; *ret_fd is closed to release it. originals_record() and
 * originals_forget() take it themselves. */
int originals_lock(const char *dir, int *ret_fd);

/* originals_record() and originals_forget() for a caller that holds
 * originals_lock() across more than the record: `apply` holds it from the
 * record through its writes to the disk, restore from its writes through
 * forgetting the record, so neither can slip between the other's steps (a
 * restore between apply's "already recorded" and its writes would leave the
 * disk tuned with no record). `read_now` (may be NULL): queue rows the caller
 * has read from the disk just now, before any write of its own, normalized,
 * by knob id (NULL where not read): recorded as they are instead of being read
 * again. */
int originals_record_locked(const char *dir, const DevicePlan *p, const char *const read_now[_KNOB_MAX]);

/* Remove the temporaries ("NAME.json.tmp.*") that a writer killed between
 * writing a record and renaming it into place left in `dir`, under the lock.
 * The number removed, or -errno. */
int originals_remove_temporaries(const char *dir);
int originals_forget_locked(const char *dir, const char *name);

/* Text for an error of originals_record()/originals_load(): -EBADMSG is a record
 * that is not a valid one (it is never overwritten), file_strerror() otherwise. */
const char *originals_strerror(int r);

/* <dir>/<name>.json */
char *originals_record_path(const char *dir, const char *name);
