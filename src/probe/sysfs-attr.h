/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <libudev.h>

/* A trimmed copy of a sysfs attribute of `u` (NVMe and SCSI pad model strings);
 * NULL when absent or blank, or when u is NULL. */
char *attr_trimmed(struct udev_device *u, const char *attr);
