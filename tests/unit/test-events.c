/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal catalog tells the truth: every MESSAGE_ID iotuned sends has a
 * catalog entry, every entry belongs to an event kind, and every field a catalog
 * text names (@DEVICE@, @PREVIOUS@, ...) is present in each entry sent with that
 * ID, for every way the daemon sends it. A missing field makes `journalctl -x`
 * print the placeholder itself ("the value was @PREVIOUS@"). The VM suite checks
 * the same on the real journal of a real run (lib/guest.sh,
 * assert_journal_matches_catalog). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "events.h"
#include "knob.h"
#include "macro.h"
#include "tests.h"
#include "util.h"

#define MAX_ENTRIES 64
#define MAX_NAMES 32

typedef struct CatalogEntry {
        char id[33];
        char *names[MAX_NAMES]; /* the @FIELD@ names its text uses */
        size_t n_names;
        unsigned seen;          /* events sent with this ID by the test */
} CatalogEntry;

static CatalogEntry catalog[MAX_ENTRIES];
static size_t n_catalog;
static unsigned problems;

static void catalog_add_name(CatalogEntry *e, const char *name, size_t len) {
        for (size_t i = 0; i < e->n_names; i++)
                if (strlen(e->names[i]) == len && strncmp(e->names[i], name, len) == 0)
                        return;
        if (e->n_names < MAX_NAMES)
                e->names[e->n_names++] = strndup(name, len);
}

/* The catalog format (systemd's journal-catalog): "-- ID" starts an entry, then
 * header lines and a text; @NAME@ is replaced by the entry's field NAME. */
static void catalog_load(const char *path) {
        FILE *f = fopen(path, "re");
        char line[1024];
        CatalogEntry *cur = NULL;

        if (!f) {
                printf("# cannot open %s\n", path);
                abort();
        }
        while (fgets(line, sizeof line, f)) {
                if (strncmp(line, "-- ", 3) == 0) {
                        if (n_catalog == MAX_ENTRIES)
                                abort();
                        cur = &catalog[n_catalog++];
                        snprintf(cur->id, sizeof cur->id, "%.32s", line + 3);
                        continue;
                }
                if (!cur || line[0] == '#')
                        continue;
                for (char *a = strchr(line, '@'); a; a = strchr(a, '@')) {
                        char *b = strchr(a + 1, '@');
                        size_t len;
                        if (!b)
                                break;
                        len = (size_t) (b - a - 1);
                        if (len > 0 && strspn(a + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == len) {
                                catalog_add_name(cur, a + 1, len);
                                a = b + 1;
                        } else
                                a = b;
                }
        }
        fclose(f);
}

static CatalogEntry *catalog_find(const char *id) {
        for (size_t i = 0; i < n_catalog; i++)
                if (streq(catalog[i].id, id))
                        return &catalog[i];
        return NULL;
}

static void sink(EventKind k, const char *const *fields, size_t n) {
        const char *id = event_message_id(k);
        CatalogEntry *e = catalog_find(id);
        const char *message = "";

        for (size_t i = 0; i < n; i++)
                if (strncmp(fields[i], "MESSAGE=", 8) == 0)
                        message = fields[i] + 8;
        if (!e) {
                printf("# MESSAGE_ID %s has no catalog entry (\"%s\")\n", id, message);
                problems++;
                return;
        }
        e->seen++;
        for (size_t j = 0; j < e->n_names; j++) {
                size_t len = strlen(e->names[j]);
                bool found = false;
                for (size_t i = 0; i < n && !found; i++)
                        found = strncmp(fields[i], e->names[j], len) == 0 && fields[i][len] == '=';
                if (!found) {
                        printf("# MESSAGE_ID %s: the catalog names @%s@, which this entry lacks: \"%s\"\n", id,
                               e->names[j], message);
                        problems++;
                }
        }
}

static Device dev = { .name = (char *) "nvme0n1", .syspath = (char *) "/sys/devices/pci0000:00/nvme/nvme0/nvme0n1" };

static DevicePlan plan_of(const char *profile, const char *rule) {
        return (DevicePlan) { .device = &dev, .profile = (char *) profile, .rule = (char *) rule };
}

/* A knob setting as reconcile leaves it for each state. */
static Setting setting(const char *knob, SettingState state) {
        Setting s = { .knob = knob_by_name(knob), .irq = -1, .desired = (char *) "2", .state = state };
        if (!s.knob)
                abort();
        switch (state) {
        case STATE_CHANGED:
                s.effective = (char *) "2", s.observed = (char *) "2", s.previous = (char *) "1";
                break;
        case STATE_OK:
                s.effective = (char *) "2", s.observed = (char *) "2";
                break;
        case STATE_UNSUPPORTED:
                s.note = (char *) "no such attribute";
                break;
        case STATE_FAILED:
                /* a failed write: read back before, nothing after */
                s.effective = (char *) "2", s.note = (char *) "write: Invalid argument";
                break;
        case STATE_PENDING_REBOOT:
                s.effective = (char *) "2", s.observed = (char *) "0";
                break;
        default:
                break;
        }
        return s;
}

TEST(every_kind_has_a_catalog_entry_and_back) {
        for (EventKind k = 0; k < _EVENT_MAX; k++)
                if (!catalog_find(event_message_id(k))) {
                        printf("# event kind %d (%s) has no catalog entry\n", (int) k, event_message_id(k));
                        ASSERT_TRUE(false);
                }
        for (size_t i = 0; i < n_catalog; i++) {
                bool used = false;
                for (EventKind k = 0; k < _EVENT_MAX && !used; k++)
                        used = streq(event_message_id(k), catalog[i].id);
                if (!used)
                        printf("# catalog entry %s belongs to no event kind\n", catalog[i].id);
                ASSERT_TRUE(used);
        }
        /* one MESSAGE_ID per kind */
        for (EventKind a = 0; a < _EVENT_MAX; a++)
                for (EventKind b = a + 1; b < _EVENT_MAX; b++)
                        ASSERT_TRUE(!streq(event_message_id(a), event_message_id(b)));
}

TEST(tuning_outcomes) {
        Setting ss[] = { setting("rq_affinity", STATE_CHANGED), setting("nomerges", STATE_OK),
                         setting("wbt_lat_usec", STATE_UNSUPPORTED), setting("scheduler", STATE_FAILED),
                         setting("poll_queues", STATE_PENDING_REBOOT) };
        DevicePlan p = plan_of("latency", "nvme");
        DevicePlan excluded = plan_of(NULL, "usb");
        DevicePlan failed = plan_of("nonesuch", "IOTUNED_PROFILE");

        problems = 0;
        p.settings = ss;
        p.n_settings = ELEMENTSOF(ss);
        event_log_tuned(&p);
        excluded.excluded = true;
        event_log_tuned(&excluded);
        failed.error = (char *) "IOTUNED_PROFILE names no profile: nonesuch";
        event_log_tuned(&failed);
        /* a device with no profile at all: the error alone */
        failed.profile = failed.rule = NULL;
        event_log_tuned(&failed);
        event_rebound(&p, "nvme0");
        event_device(EVENT_REMOVED, LOG_INFO, &p, "%s removed; forgetting its plan and originals", dev.name);
        event_hold("nvme0n1", true, 4242, 130);
        event_hold("nvme0n1", false, 0, 0);
        {
                FindingList l = {};
                Finding *f = finding_add(&l, "nvme0n1", "software-queue", FINDING_WARNING, "scheduler", NULL,
                                         "deep queue (31.2 requests on average), await 75.3 ms");
                ASSERT_TRUE(f);
                event_finding(&p, f);
                finding_list_done(&l);
        }
        ASSERT_INT_EQ(problems, 0);
}

TEST(drift_conflict_restore) {
        Setting drifted = setting("scheduler", STATE_CHANGED);
        Setting restored = setting("rq_affinity", STATE_CHANGED);
        Setting unrestorable = setting("rq_affinity", STATE_FAILED);
        DevicePlan p = plan_of("latency", "nvme");
        /* restore plans (restore_knobs) have no profile or rule */
        DevicePlan rp = plan_of(NULL, NULL);

        problems = 0;
        event_setting(EVENT_DRIFT, LOG_NOTICE, &p, &drifted, "drifted");
        event_setting(EVENT_CONFLICT, LOG_WARNING, &p, &drifted, "conflict");
        event_drift(EVENT_DRIFT, LOG_NOTICE, &p, &drifted, DRIFT_SEEN_UDEV_CHANGE, "drifted after a change event");
        drifted.writer = (char *) "udev rule /etc/udev/rules.d/60-io.rules:3 writing mq-deadline";
        event_drift(EVENT_CONFLICT, LOG_WARNING, &p, &drifted, DRIFT_SEEN_UDEV_CHANGE, "conflict, writer named");
        drifted.writer = NULL;
        event_setting(EVENT_RESTORE, LOG_INFO, &rp, &restored, "restored");
        event_setting(EVENT_FAILED, LOG_WARNING, &rp, &unrestorable, "could not be restored");
        event_setting(EVENT_FAILED, LOG_WARNING, &p, &unrestorable, "failed in a drift check");
        ASSERT_INT_EQ(problems, 0);
}

TEST(configuration_and_irqbalance) {
        Diagnostic at = { .mark = { .file = (char *) "/etc/iotuned/iotuned.yaml", .line = 3, .column = 14 },
                          .message = (char *) "unknown profile" };
        Diagnostic file_only = { .mark = { .file = (char *) "/etc/iotuned/profiles/x.yaml" },
                                 .message = (char *) "not a regular file" };
        Diagnostic nowhere = { .message = (char *) "too many drop-ins" };
        unsigned irqs[] = { 40, 41 };

        problems = 0;
        event_config_error(&at, false);
        event_config_error(&file_only, true);
        event_config_error(&nowhere, true);
        event_irqbalance_bans_left(LOG_WARNING, false, 812, "/run/irqbalance/irqbalance812.sock", irqs, 2, 4,
                                   -ETIMEDOUT, "timed out", "/run/iotuned/irqbalance-bans.json");
        event_irqbalance_bans_left(LOG_NOTICE, true, 812, "/run/irqbalance/irqbalance812.sock", irqs, 1, 1, 0,
                                   "no answer", "/run/iotuned/irqbalance-bans.json");
        ASSERT_INT_EQ(problems, 0);
}

TEST(every_entry_was_exercised) {
        for (size_t i = 0; i < n_catalog; i++) {
                if (!catalog[i].seen)
                        printf("# catalog entry %s was not exercised by this test\n", catalog[i].id);
                ASSERT_TRUE(catalog[i].seen > 0);
        }
}

static void setup(void) {
        const char *dir = getenv("IOTUNED_TEST_CATALOG");
        catalog_load(dir ?: "catalog/iotuned.catalog");
        event_set_sink(sink);
}

int test_failed_flag;
int main(void) {
        static const TestCase cases[] = { T(every_kind_has_a_catalog_entry_and_back), T(tuning_outcomes),
                                          T(drift_conflict_restore), T(configuration_and_irqbalance),
                                          T(every_entry_was_exercised) };
        setup();
        return run_tests(cases, ELEMENTSOF(cases));
}
