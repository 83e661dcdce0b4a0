/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "diag.h"
#include "plan.h"

/* Journal events people search for. Each kind has a MESSAGE_ID of its own with an
 * entry in catalog/iotuned.catalog, so `journalctl -x` explains it; every field
 * the catalog text names (@DEVICE@, @KNOB@, ...) is sent with every entry of that
 * kind (tests/unit/test-events.c checks it). Every event about a device carries
 * DEVICE= (and PROFILE=, RULE= when it has them) and, for a knob, KNOB=, DESIRED=,
 * OBSERVED= (and PREVIOUS= for a write): `journalctl -u iotuned DEVICE=nvme0n1`. */
typedef enum EventKind {
        EVENT_TUNED,          /* a knob was written when a device was tuned */
        EVENT_DRIFT,          /* someone changed a tuned value; it was put back */
        EVENT_CONFLICT,       /* something keeps changing it: backing off */
        EVENT_UNSUPPORTED,    /* the device lacks a knob its profile sets */
        EVENT_FAILED,         /* a knob could not be read, written or resolved */
        EVENT_CONFIG_ERROR,   /* a configuration error (start or reload) */
        EVENT_RESTORE,        /* original values put back */
        EVENT_REMOVED,        /* a tuned device went away */
        EVENT_PENDING_REBOOT, /* an NVMe queue count waits for the driver to probe the controller again */
        EVENT_BANS_LEFT,      /* irqbalance bans iotuned could not withdraw when it stopped */
        EVENT_DEVICE_TUNED,   /* a device was tuned: the summary, with counts */
        EVENT_EXCLUDED,       /* a device is excluded by a rule and left alone */
        EVENT_DEVICE_FAILED,  /* a device could not be tuned at all */
        EVENT_REBOUND,        /* an NVMe controller was unbound and bound for new queue counts */
        EVENT_HELD,           /* `iotunectl tune` holds a device, or its hold ended */
        EVENT_FINDING,        /* a drift check's load samples show a problem (diagnose/signals.h) */
        _EVENT_MAX,
} EventKind;

const char *event_message_id(EventKind k);

/* Tests: receive every event's fields ("MESSAGE=...", "MESSAGE_ID=...", ...)
 * instead of the journal or stderr; NULL restores the default. */
typedef void (*EventSink)(EventKind k, const char *const *fields, size_t n_fields);
void event_set_sink(EventSink sink);

/* A controller rebind (the first device of the controller names it). */
void event_rebound(const DevicePlan *p, const char *controller);

/* A knob-level event. */
void event_setting(EventKind k, int priority, const DevicePlan *p, const Setting *s, const char *fmt, ...)
        _printf_(5, 6);
/* Where a drift was seen: a drift check, or a udev "change" event of the disk (a
 * udev rule rewrote the knob). Sent as DRIFT_SEEN= ("drift-check", "udev-change", "udev-add"). */
typedef enum DriftSeen {
        DRIFT_SEEN_CHECK,
        DRIFT_SEEN_UDEV_CHANGE,
        DRIFT_SEEN_UDEV_ADD, /* udev's "add" of a disk tuned at its kernel event (hotplug.c) */
} DriftSeen;

/* EVENT_DRIFT and EVENT_CONFLICT: a knob-level event with DRIFT_SEEN=, and WRITER=
 * when the setting's writer is known. */
void event_drift(EventKind k, int priority, const DevicePlan *p, const Setting *s, DriftSeen seen, const char *fmt,
                 ...) _printf_(6, 7);
/* A device-level event (no KNOB=). */
void event_device(EventKind k, int priority, const DevicePlan *p, const char *fmt, ...) _printf_(4, 5);
/* One configuration diagnostic, with CONFIG_FILE=, CONFIG_LINE=, CONFIG_COLUMN=. */
void event_config_error(const Diagnostic *d, bool on_reload);

/* At stop: the IRQs irqbalance (pid, socket) may still ban because iotuned could
 * not withdraw them, or could only queue the withdrawal without seeing it taken
 * (`queued`), in `attempts` tries; `error` (a negative errno) and `cause` say why,
 * `record` is the file that lets the next start withdraw them. Fields IRQS=
 * ("40 41"), IRQBALANCE_PID=, IRQBALANCE_SOCKET=, WITHDRAWAL= ("queued" or
 * "not-sent"), ATTEMPTS=, ERRNO=. */
void event_irqbalance_bans_left(int priority, bool queued, int pid, const char *socket_path, const unsigned *irqs,
                                size_t n, unsigned attempts, int error, const char *cause, const char *record);

/* `iotunectl tune` (pid) holds `disk` for at most `seconds` (begins), or its hold
 * ended. Fields DEVICE=, HOLDER_PID= (when it begins). */
void event_hold(const char *disk, bool begins, int pid, unsigned long long seconds);

/* A finding about a tuned disk, when it first appears: FINDING= (its kind),
 * FINDING_SEVERITY=, and FINDING_KNOB=, FINDING_SOURCE= when it has them. */
void event_finding(const DevicePlan *p, const Finding *f);

/* Log the outcome of a first tuning (start, hotplug, reload) of one device. */
void event_log_tuned(const DevicePlan *p);
