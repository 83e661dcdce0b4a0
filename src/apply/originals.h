/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "device.h"
#include "knob.h"

/* Original values, recorded under /run/iotuned/originals/<disk>.json before the
 * first write to a disk, so `iotunectl restore` (and the daemon on stop) can put
 * them back even after a crash. /run is tmpfs: a reboot forgets them, as it
 * forgets the tuning. The disk's diskseq guards against a different disk that
 * later gets the same name. */

/* Record the current values of every knob of `d`, unless a record for this very
 * disk already exists (the first original wins). */
int originals_record(const char *dir, const Device *d);

/* values[k] = recorded value or NULL. -ENOENT if there is no record; -ESTALE if the
 * record belongs to an earlier disk of the same name. */
int originals_load(const char *dir, const Device *d, char *values[_KNOB_MAX]);

/* Kernel names that have a record, sorted. */
int originals_list(const char *dir, char ***ret);

int originals_forget(const char *dir, const char *name);
