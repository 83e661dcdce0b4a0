/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-journal.h>

#include "events.h"
#include "timing.h"
#include "log.h"
#include "util.h"

/* Keep in sync with catalog/iotuned.catalog. */
static const char *const message_ids[_EVENT_MAX] = {
        [EVENT_TUNED] = "c0e74b1dfaf847d5b438382e8afef2b0",
        [EVENT_DRIFT] = "ddd3ea3720e646139165099acdaad3df",
        [EVENT_CONFLICT] = "095bdbb2377f45468291453ee991e258",
        [EVENT_UNSUPPORTED] = "ff7b44bea39643da99ddbf3a343030d5",
        [EVENT_FAILED] = "78e618eba7c04a25abdf1b130e03302c",
        [EVENT_CONFIG_ERROR] = "76311640db514e3bbb4782dc4928130a",
        [EVENT_RESTORE] = "491c4daa961a49429ac640a54eacbec9",
        [EVENT_REMOVED] = "37d45c408b0b4ba99354ba9add6a1a42",
        [EVENT_PENDING_REBOOT] = "492b5ad305de457895dce53f9df26d01",
        [EVENT_BANS_LEFT] = "1fbc58d9394b4ee0a566e877e7cfca78",
        [EVENT_DEVICE_TUNED] = "864c75e8f2f04514959963e275d18f0d",
        [EVENT_EXCLUDED] = "d1f3192682bc4f81902bc0822cf0eff7",
        [EVENT_DEVICE_FAILED] = "209e96bbbcf94bcf8c11688bcfa1047e",
        [EVENT_REBOUND] = "888b89d6e31442648abcc12ac966203e",
        [EVENT_HELD] = "1eefff6cf7dd4a7b8e86e08aba44bcdc",
        [EVENT_FINDING] = "9a590a170d564c508a3b1cd0f25294f6",
};

static EventSink event_sink = NULL;

void event_set_sink(EventSink sink) {
        event_sink = sink;
}

const char *event_message_id(EventKind k) {
        return message_ids[k];
}

/* Where log.c logs (log_target_from_environment()): the journal under systemd,
 * stderr otherwise (a developer's terminal).
 * Fields are passed as "KEY=value" strings; NULL values are skipped. */
static void emit(EventKind k, int priority, const char *message, const char *const *fields, size_t n_fields) {
        TIMING_SCOPE(TIMING_JOURNAL);
        struct iovec iov[24];
        char *bufs[24];
        size_t n = 0;

        assert(message);

        if (priority > log_get_max_level() && !event_sink)
                return;
        if (!event_sink && log_get_target() != LOG_TARGET_JOURNAL) {
                fprintf(stderr, "iotuned: %s\n", message);
                return;
        }
#define ADD(...)                                                        \
        do {                                                            \
                if (n < ELEMENTSOF(iov) && asprintf(&bufs[n], __VA_ARGS__) >= 0) { \
                        iov[n].iov_base = bufs[n];                      \
                        iov[n].iov_len = strlen(bufs[n]);               \
                        n++;                                            \
                }                                                       \
        } while (0)
        ADD("MESSAGE=%s", message);
        ADD("PRIORITY=%d", priority);
        ADD("MESSAGE_ID=%s", message_ids[k]);
        ADD("SYSLOG_IDENTIFIER=iotuned");
        for (size_t i = 0; i < n_fields; i++)
                if (fields[i])
                        ADD("%s", fields[i]);
#undef ADD
        if (event_sink)
                event_sink(k, (const char *const *) bufs, n);
        else
                (void) sd_journal_sendv(iov, (int) n);
        for (size_t i = 0; i < n; i++)
                free(bufs[i]);
}

static char *field(const char *key, const char *value) {
        char *f = NULL;

        assert(key);

        if (value)
                (void) asprintf_safe(&f, "%s=%s", key, value);
        return f;
}

static void free_fields(char **f, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(f[i]);
}

void event_hold(const char *disk, bool begins, int pid, unsigned long long seconds) {
        _cleanup_free_ char *msg = NULL;
        char *f[2] = {};

        assert(disk);

        if (begins)
                (void) asprintf_safe(&msg,
                                     "%s: held by iotunectl tune (pid %d) for at most %llu s: not tuned or corrected "
                                     "until the hold ends.",
                                     disk, pid, seconds);
        else
                (void) asprintf_safe(&msg, "%s: the hold of iotunectl tune has ended; tuning it again.", disk);
        f[0] = field("DEVICE", disk);
        if (begins)
                (void) asprintf_safe(&f[1], "HOLDER_PID=%d", pid);
        if (msg)
                emit(EVENT_HELD, LOG_INFO, msg, (const char *const *) f, ELEMENTSOF(f));
        free_fields(f, ELEMENTSOF(f));
}

/* Journal fields of a device event, plus a knob's when `s` is given, plus up to
 * four more (taken over and freed here). */
static void emit_device_extra(EventKind k, int priority, const DevicePlan *p, const Setting *s, const char *msg,
                              char *extra[static 4]) {
        char *f[14] = {};

        assert(p);
        assert(msg);
        assert(extra);

        f[0] = field("DEVICE", p->device->name);
        f[1] = field("PROFILE", p->profile);
        f[2] = field("RULE", p->rule);
        f[3] = field("DEVICE_SYSPATH", p->device->syspath);
        if (s) {
                f[4] = field("KNOB", s->knob->name);
                f[5] = s->irq >= 0 ? field("IRQ", setting_label(s)) : NULL;
                f[6] = field("DESIRED", s->effective ?: s->desired);
                f[7] = field("OBSERVED", s->observed);
                f[8] = field("PREVIOUS", s->previous);
                f[9] = field("STATE", setting_state_to_string(s->state));
        }
        for (size_t i = 0; i < 4; i++)
                f[10 + i] = extra[i];
        emit(k, priority, msg, (const char *const *) f, ELEMENTSOF(f));
        free_fields(f, ELEMENTSOF(f));
}

static void emit_device(EventKind k, int priority, const DevicePlan *p, const Setting *s, const char *msg) {
        char *none[4] = {};

        assert(p);
        assert(msg);

        emit_device_extra(k, priority, p, s, msg, none);
}

void event_setting(EventKind k, int priority, const DevicePlan *p, const Setting *s, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        assert(p);
        assert(s);

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (msg)
                emit_device(k, priority, p, s, msg);
}

void event_drift(EventKind k, int priority, const DevicePlan *p, const Setting *s, DriftSeen seen, const char *fmt,
                 ...) {
        _cleanup_free_ char *msg = NULL;
        char *extra[4] = {};
        va_list ap;

        assert(p);
        assert(s);

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        extra[0] = field("DRIFT_SEEN", seen == DRIFT_SEEN_UDEV_CHANGE ? "udev-change"
                                          : seen == DRIFT_SEEN_UDEV_ADD  ? "udev-add"
                                                                         : "drift-check");
        extra[1] = field("WRITER", s->writer);
        if (msg)
                emit_device_extra(k, priority, p, s, msg, extra);
        else
                free_fields(extra, ELEMENTSOF(extra));
}

void event_finding(const DevicePlan *p, const Finding *f) {
        _cleanup_free_ char *msg = NULL;
        char *extra[4] = {};

        assert(p);
        assert(f);

        if (asprintf_safe(&msg, "%s: %s", p->device->name, f->summary) < 0)
                return;
        extra[0] = field("FINDING", f->kind);
        extra[1] = field("FINDING_SEVERITY", finding_severity_to_string(f->severity));
        extra[2] = f->knob ? field("FINDING_KNOB", f->knob) : NULL;
        extra[3] = field("FINDING_SOURCE", f->source);
        emit_device_extra(EVENT_FINDING, f->severity >= FINDING_WARNING ? LOG_WARNING : LOG_NOTICE, p, NULL, msg,
                          extra);
}

void event_device(EventKind k, int priority, const DevicePlan *p, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        assert(p);

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (msg)
                emit_device(k, priority, p, NULL, msg);
}

void event_config_error(const Diagnostic *d, bool on_reload) {
        _cleanup_free_ char *msg = NULL;
        char *f[3] = {};

        assert(d);

        if (d->mark.file && d->mark.line)
                (void) asprintf_safe(&msg, "%s:%u:%u: %s%s", d->mark.file, d->mark.line, d->mark.column, d->message,
                                     on_reload ? " (reload refused; the previous configuration stays in force)" : "");
        else
                (void) asprintf_safe(&msg, "%s%s%s%s", d->mark.file ?: "", d->mark.file ? ": " : "", d->message,
                                     on_reload ? " (reload refused; the previous configuration stays in force)" : "");
        if (!msg)
                return;
        f[0] = field("CONFIG_FILE", d->mark.file);
        if (d->mark.line) {
                (void) asprintf_safe(&f[1], "CONFIG_LINE=%u", d->mark.line);
                (void) asprintf_safe(&f[2], "CONFIG_COLUMN=%u", d->mark.column);
        }
        emit(EVENT_CONFIG_ERROR, LOG_ERR, msg, (const char *const *) f, ELEMENTSOF(f));
        free_fields(f, ELEMENTSOF(f));
}

void event_irqbalance_bans_left(int priority, bool queued, int pid, const char *socket_path, const unsigned *irqs,
                                size_t n, unsigned attempts, int error, const char *cause, const char *record) {
        _cleanup_free_ char *list = NULL, *msg = NULL;
        const char *them = n == 1 ? "it" : "them";
        char *f[6] = {};
        size_t len = 0;

        assert(socket_path);
        assert(cause);
        assert(record);

        /* "40 41 57": at most IRQBALANCE_BANS_MAX numbers of up to 8 digits. */
        list = malloc(n * 9 + 1);
        if (!list)
                return;
        list[0] = 0;
        for (size_t i = 0; i < n; i++)
                len += sprintf(list + len, "%s%u", i ? " " : "", irqs[i]);
        if (queued)
                (void) asprintf_safe(&msg,
                                     "irqbalance (pid %d) may still ban IRQ%s %s: iotuned stopped before irqbalance "
                                     "showed %s withdrawn (%u attempt%s): %s. %s keeps %s for the next start of "
                                     "iotuned, which withdraws what is left.",
                                     pid, n == 1 ? "" : "s", list, n == 1 ? "this ban" : "these bans", attempts,
                                     attempts == 1 ? "" : "s", cause, record, them);
        else
                (void) asprintf_safe(&msg,
                                     "irqbalance (pid %d) may still ban IRQ%s %s: iotuned could not withdraw %s before "
                                     "stopping (%u attempt%s): %s. %s keeps %s for the next start of iotuned, which "
                                     "withdraws %s; a restart of irqbalance drops %s too.",
                                     pid, n == 1 ? "" : "s", list, n == 1 ? "this ban" : "these bans", attempts,
                                     attempts == 1 ? "" : "s", cause, record, them, them, them);
        if (!msg)
                return;
        f[0] = field("IRQS", list);
        (void) asprintf_safe(&f[1], "IRQBALANCE_PID=%d", pid);
        f[2] = field("IRQBALANCE_SOCKET", socket_path);
        f[3] = field("WITHDRAWAL", queued ? "queued" : "not-sent");
        (void) asprintf_safe(&f[4], "ATTEMPTS=%u", attempts);
        if (error)
                (void) asprintf_safe(&f[5], "ERRNO=%d", error < 0 ? -error : error);
        emit(EVENT_BANS_LEFT, priority, msg, (const char *const *) f, ELEMENTSOF(f));
        free_fields(f, ELEMENTSOF(f));
}

void event_rebound(const DevicePlan *p, const char *controller) {
        _cleanup_free_ char *msg = NULL;
        char *extra[4] = {};

        assert(p);
        assert(controller);

        if (asprintf_safe(&msg,
                          "%s: controller %s was unbound and bound again for new queue counts; its disks come back "
                          "as new devices",
                          p->device->name, controller) < 0)
                return;
        extra[0] = field("NVME_CONTROLLER", controller);
        emit_device_extra(EVENT_REBOUND, LOG_NOTICE, p, NULL, msg, extra);
}

void event_log_tuned(const DevicePlan *p) {
        unsigned counts[_STATE_MAX] = {};
        _cleanup_free_ char *msg = NULL;
        char *extra[4] = {};

        assert(p);

        if (p->excluded) {
                event_device(EVENT_EXCLUDED, LOG_INFO, p, "%s: excluded by rule %s, left alone", p->device->name,
                             p->rule);
                return;
        }
        if (p->error) {
                if (asprintf_safe(&msg, "%s: not tuned: %s", p->device->name, p->error) < 0)
                        return;
                extra[0] = field("ERROR", p->error);
                emit_device_extra(EVENT_DEVICE_FAILED, LOG_WARNING, p, NULL, msg, extra);
                return;
        }
        for (size_t i = 0; i < p->n_settings; i++) {
                const Setting *s = &p->settings[i];
                counts[s->state]++;
                if (s->state == STATE_CHANGED)
                        event_setting(EVENT_TUNED, LOG_INFO, p, s, "%s: %s %s -> %s (profile %s)", p->device->name,
                                      setting_label(s), s->previous ?: "?", s->observed, p->profile);
                else if (s->state == STATE_UNSUPPORTED)
                        event_setting(EVENT_UNSUPPORTED, LOG_NOTICE, p, s, "%s: %s not supported: %s",
                                      p->device->name, setting_label(s), s->note ?: "");
                else if (s->state == STATE_FAILED)
                        event_setting(EVENT_FAILED, LOG_WARNING, p, s, "%s: %s: %s", p->device->name, setting_label(s),
                                      s->note ?: "failed");
                else if (s->state == STATE_PENDING_REBOOT)
                        event_setting(EVENT_PENDING_REBOOT, LOG_NOTICE, p, s, "%s: %s pending reboot: %s",
                                      p->device->name, setting_label(s), s->note ?: "");
        }
        if (asprintf_safe(&msg, "%s tuned with profile %s (rule %s): %u changed, %u already ok, %u unsupported, %u failed%s",
                          p->device->name, p->profile, p->rule, counts[STATE_CHANGED], counts[STATE_OK],
                          counts[STATE_UNSUPPORTED], counts[STATE_FAILED],
                          counts[STATE_PENDING_REBOOT] ? ", some pending a reboot" : "") < 0)
                return;
        (void) asprintf_safe(&extra[0], "SETTINGS_CHANGED=%u", counts[STATE_CHANGED]);
        (void) asprintf_safe(&extra[1], "SETTINGS_OK=%u", counts[STATE_OK]);
        (void) asprintf_safe(&extra[2], "SETTINGS_UNSUPPORTED=%u", counts[STATE_UNSUPPORTED]);
        (void) asprintf_safe(&extra[3], "SETTINGS_FAILED=%u", counts[STATE_FAILED]);
        emit_device_extra(EVENT_DEVICE_TUNED, counts[STATE_FAILED] ? LOG_WARNING : LOG_INFO, p, NULL, msg, extra);
}
