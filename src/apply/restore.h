/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <libudev.h>

#include "plan.h"

/* Plan a return to the recorded originals of every recorded disk (or only those
 * in `only`, NULL = all), reconcile it in APPLY mode, and drop each record whose
 * values are all back. Disks that are gone, or were replaced by another disk of
 * the same name (diskseq differs), have their record dropped and their names
 * added to *ret_gone. Shared by `iotunectl restore` and the daemon's stop.
 * `known` (may be NULL): disks the caller has probed already (the daemon's plan);
 * one whose diskseq sysfs still shows is taken from there instead of being
 * probed again through libudev. */
int restore_originals(struct udev *udev, const char *originals_dir, const char *proc_root, char *const *only,
                      const Plan *known, Plan *ret, char ***ret_gone);

/* Restore only the knobs in `knobs` (true = restore) and the vectors in `irqs`
 * of one disk: used when a reload stops wanting them. The record is kept (other
 * knobs may still be tuned). Takes ownership of `d`. */
int restore_knobs(const char *originals_dir, const char *proc_root, Device *d, const bool knobs[_KNOB_MAX],
                  const int *irqs, size_t n_irqs, DevicePlan **ret);

/* Under --root (root neither NULL, "" nor "/"): each vector file of the plan,
 * <root>/proc/irq/N/..., resolved inside the root (rootfs.h), so that a link in the
 * tree never leads a read or a write out of it. */
int device_plan_confine_to_root(DevicePlan *p, const char *root);
int plan_confine_to_root(Plan *p, const char *root);
