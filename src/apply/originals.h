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

/* Record the current values of every queue knob of the plan's disk and of each
 * vector it plans, unless already recorded for this very disk: the first
 * original wins, and vectors planned later (after a reload) are added. */
int originals_record(const char *dir, const DevicePlan *p);

/* values[k] = recorded value or NULL; *ret_irqs = "IRQ=cpulist" strings (may be
 * NULL). -ENOENT if there is no record; -ESTALE if the record belongs to an
 * earlier disk of the same name. */
int originals_load(const char *dir, const Device *d, char *values[_KNOB_MAX], char ***ret_irqs);

/* Kernel names that have a record, sorted. */
int originals_list(const char *dir, char ***ret);

int originals_forget(const char *dir, const char *name);
