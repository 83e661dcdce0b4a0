/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "drift-check.h"
#include "fileio.h"
#include "macro.h"
#include "publisher.h"
#include "status.h"
#include "tests.h"
#include "tmpdir.h"

#define GOOD_SETTING "{\"knob\":\"scheduler\",\"object\":null,\"state\":\"drifted\",\"effective\":\"none\"," \
                     "\"observed\":\"mq-deadline\",\"note\":null,\"drifts\":3}"
#define GOOD_DEVICE "{\"device\":\"nvme0n1\",\"profile\":\"latency\",\"rule\":\"nvme\",\"error\":null," \
                    "\"excluded\":false,\"facts\":{\"nvme\":{\"controller\":\"nvme0\",\"address\":\"0000:00:04.0\"," \
                    "\"model\":\"QEMU\",\"firmware\":\"1.0\",\"apst_supported\":true," \
                    "\"queue_maps\":{\"default\":2,\"read\":0,\"poll\":1}}},\"settings\":[" GOOD_SETTING "]}"
#define GOOD_DAEMON "\"daemon\":{\"pid\":42,\"drifts_corrected\":1,\"conflicts\":0,\"irqbalance\":{\"state\":\"absent\"}}"

TEST(good_document) {
        Status s = {};
        char *err = NULL;
        ASSERT_INT_EQ(status_parse("{" GOOD_DAEMON ",\"devices\":[" GOOD_DEVICE "]}\n", &s, &err), 0);
        ASSERT_INT_EQ(s.pid, 42);
        ASSERT_INT_EQ(s.drifts_corrected, 1);
        ASSERT_STREQ(s.irqbalance_state, "absent");
        ASSERT_INT_EQ(s.n_devices, 1);
        ASSERT_STREQ(s.devices[0].device, "nvme0n1");
        ASSERT_TRUE(s.devices[0].nvme);
        ASSERT_INT_EQ(s.devices[0].nvme->maps_poll, 1);
        ASSERT_INT_EQ(s.devices[0].nvme->apst_supported, 1);
        ASSERT_INT_EQ(s.devices[0].n_settings, 1);
        ASSERT_TRUE(s.devices[0].settings[0].state == STATE_DRIFTED);
        ASSERT_TRUE(s.devices[0].settings[0].object == NULL);
        ASSERT_INT_EQ(s.devices[0].settings[0].drifts, 3);
        status_done(&s);
}

TEST(writer_conflict_and_findings) {
        Status s = {};
        char *err = NULL;
        ASSERT_INT_EQ(status_parse("{" GOOD_DAEMON ",\"devices\":[{\"device\":\"nvme0n1\",\"settings\":[{\"knob\":"
                                   "\"scheduler\",\"state\":\"drifted\",\"drifts\":5,\"conflict\":true,\"writer\":"
                                   "\"udev rule /etc/udev/rules.d/60-x.rules:2 writing mq-deadline\"}],\"findings\":[{"
                                   "\"kind\":\"software-queue\",\"severity\":\"warning\",\"knob\":\"scheduler\","
                                   "\"summary\":\"deep queue\",\"values\":{\"queue_depth\":31.2}}]}]}",
                                   &s, &err),
                      0);
        ASSERT_TRUE(s.devices[0].settings[0].conflict);
        ASSERT_STREQ(s.devices[0].settings[0].writer, "udev rule /etc/udev/rules.d/60-x.rules:2 writing mq-deadline");
        ASSERT_INT_EQ(s.devices[0].n_findings, 1);
        ASSERT_STREQ(s.devices[0].findings[0].kind, "software-queue");
        ASSERT_STREQ(s.devices[0].findings[0].severity, "warning");
        ASSERT_STREQ(s.devices[0].findings[0].knob, "scheduler");
        ASSERT_STREQ(s.devices[0].findings[0].summary, "deep queue");
        status_done(&s);
}

TEST(multipath_path) {
        Status s = {};
        char *err = NULL;
        ASSERT_INT_EQ(status_parse("{" GOOD_DAEMON ",\"devices\":[" GOOD_DEVICE ",{\"device\":\"nvme1c2n1\","
                                   "\"facts\":{\"multipath_path\":{\"head\":\"nvme1n1\",\"controller\":\"nvme2\","
                                   "\"state\":\"connecting\",\"ana_state\":null}}}]}",
                                   &s, &err),
                      0);
        ASSERT_INT_EQ(s.n_devices, 2);
        ASSERT_TRUE(s.devices[0].path == NULL);
        ASSERT_TRUE(s.devices[1].path);
        ASSERT_STREQ(s.devices[1].path->head, "nvme1n1");
        ASSERT_STREQ(s.devices[1].path->controller, "nvme2");
        ASSERT_STREQ(s.devices[1].path->state, "connecting");
        ASSERT_TRUE(s.devices[1].path->ana_state == NULL);
        status_done(&s);
}

TEST(minimal_document) {
        Status s = {};
        ASSERT_INT_EQ(status_parse("{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"sda\"}]}", &s, NULL), 0);
        ASSERT_INT_EQ(s.n_devices, 1);
        ASSERT_INT_EQ(s.devices[0].n_settings, 0);
        ASSERT_TRUE(s.devices[0].nvme == NULL);
        status_done(&s);
}

static const struct {
        const char *doc, *error;
} bad[] = {
        { "", "(document): empty" },
        { " \n", "(document): empty" },
        { "null", "(document): expected an object, not null" },
        { "[]", "(document): expected an object" },
        { "42", "(document): expected an object" },
        { "{\"daemon\":", "(document): not JSON (unexpected end of data at byte 10)" },
        { "{} {}", "(document): trailing data at byte 3" },
        { "{\"devices\":[]}", "daemon: missing" },
        { "{\"daemon\":[],\"devices\":[]}", "daemon: expected an object" },
        { "{\"daemon\":{\"pid\":1}}", "devices: missing" },
        { "{\"daemon\":{\"pid\":1},\"devices\":{}}", "devices: expected an array" },
        { "{\"daemon\":{\"pid\":1},\"devices\":\"x\"}", "devices: expected an array" },
        { "{\"daemon\":{\"pid\":1},\"devices\":null}", "devices: expected an array, not null" },
        { "{\"daemon\":{},\"devices\":[]}", "daemon.pid: missing" },
        { "{\"daemon\":{\"pid\":\"1\"},\"devices\":[]}", "daemon.pid: expected an integer" },
        { "{\"daemon\":{\"pid\":1,\"drifts_corrected\":-1},\"devices\":[]}",
          "daemon.drifts_corrected: expected an integer from 0 to 4294967295" },
        { "{\"daemon\":{\"pid\":1,\"conflicts\":1e99},\"devices\":[]}", "daemon.conflicts: expected an integer" },
        { "{\"daemon\":{\"pid\":1,\"irqbalance\":1},\"devices\":[]}", "daemon.irqbalance: expected an object" },
        { "{\"daemon\":{\"pid\":1,\"irqbalance\":{\"state\":[]}},\"devices\":[]}",
          "daemon.irqbalance.state: expected a string" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[" GOOD_DEVICE ",3]}", "devices[1]: expected an object" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{}]}", "devices[0].device: missing" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"findings\":{}}]}",
          "devices[0].findings: expected an array" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"findings\":[{\"kind\":\"x\",\"severity\":1}]}]}",
          "devices[0].findings[0].severity: expected a string" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"findings\":[{\"kind\":\"x\",\"severity\":\"warning\"}]}]}",
          "devices[0].findings[0].summary: missing" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"settings\":[{\"knob\":\"k\",\"state\":\"ok\","
          "\"writer\":7}]}]}",
          "devices[0].settings[0].writer: expected a string" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":null}]}", "devices[0].device: expected a string, not null" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"settings\":{}}]}",
          "devices[0].settings: expected an array" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"settings\":\"ok\"}]}",
          "devices[0].settings: expected an array" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"excluded\":\"yes\"}]}",
          "devices[0].excluded: expected a boolean" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"error\":7}]}", "devices[0].error: expected a string" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"profile\":{}}]}",
          "devices[0].profile: expected a string" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"facts\":[]}]}", "devices[0].facts: expected an object" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"facts\":{\"nvme\":\"nvme0\"}}]}",
          "devices[0].facts.nvme: expected an object" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"facts\":{\"nvme\":{\"controller\":0}}}]}",
          "devices[0].facts.nvme.controller: expected a string" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"facts\":{\"nvme\":{\"queue_maps\":[]}}}]}",
          "devices[0].facts.nvme.queue_maps: expected an object" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"facts\":{\"nvme\":{\"queue_maps\":{\"default\":\"2\"}}}}]}",
          "devices[0].facts.nvme.queue_maps.default: expected an integer" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"facts\":{\"nvme\":{\"queue_maps\":{\"default\":1}}}}]}",
          "devices[0].facts.nvme.queue_maps.read: missing" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"facts\":{\"nvme\":{\"apst_supported\":\"yes\"}}}]}",
          "devices[0].facts.nvme.apst_supported: expected a boolean" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"facts\":{\"multipath_path\":\"nvme1n1\"}}]}",
          "devices[0].facts.multipath_path: expected an object" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"facts\":{\"multipath_path\":{}}}]}",
          "devices[0].facts.multipath_path.head: missing" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"facts\":{\"multipath_path\":{\"head\":\"h\",\"state\":1}}}]}",
          "devices[0].facts.multipath_path.state: expected a string" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"settings\":[null]}]}",
          "devices[0].settings[0]: expected an object" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"settings\":[" GOOD_SETTING ",{\"knob\":\"x\",\"state\":null}]}]}",
          "devices[0].settings[1].state: expected a string, not null" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[" GOOD_DEVICE "," GOOD_DEVICE "," GOOD_DEVICE
          ",{\"device\":\"a\",\"settings\":[{\"knob\":\"x\",\"state\":1}]}]}",
          "devices[3].settings[0].state: expected a string" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"settings\":[{\"state\":\"ok\"}]}]}",
          "devices[0].settings[0].knob: missing" },
        /* States are the writer's words (setting_state_to_string), nothing else. */
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"settings\":[{\"knob\":\"x\",\"state\":\"would-change\"}]}]}",
          "devices[0].settings[0].state: unknown state \"would-change\"" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"settings\":[{\"knob\":\"x\",\"state\":\"ok\",\"drifts\":\"3\"}]}]}",
          "devices[0].settings[0].drifts: expected an integer" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"settings\":[{\"knob\":\"x\",\"state\":\"ok\",\"drifts\":5000000000}]}]}",
          "devices[0].settings[0].drifts: expected an integer from 0 to 4294967295" },
        { "{\"daemon\":{\"pid\":1},\"devices\":[{\"device\":\"a\",\"settings\":[{\"knob\":\"x\",\"state\":\"ok\",\"observed\":true}]}]}",
          "devices[0].settings[0].observed: expected a string" },
        { "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
          "(document): not JSON (nesting too deep at byte 16)" },
};

TEST(malformed_documents_name_the_member) {
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                Status s = {};
                char *err = NULL;
                int r = status_parse(bad[i].doc, &s, &err);
                if (r != -EBADMSG || !err || strcmp(err, bad[i].error) != 0) {
                        fprintf(stderr, "# case %zu (%s): r=%d error '%s', expected '%s'\n", i, bad[i].doc, r,
                                err ?: "(null)", bad[i].error);
                        test_failed_flag = 1;
                }
                free(err);
        }
}

TEST(pid_out_of_range_is_not_running) {
        Status s = {};
        ASSERT_INT_EQ(status_parse("{\"daemon\":{\"pid\":99999999999},\"devices\":[]}", &s, NULL), 0);
        ASSERT_TRUE(s.pid <= 0);
        status_done(&s);
        ASSERT_INT_EQ(status_parse("{\"daemon\":{\"pid\":-5},\"devices\":[]}", &s, NULL), 0);
        ASSERT_TRUE(s.pid <= 0);
        status_done(&s);
}

TEST(never_reads_past_the_end) {
        /* Found by libFuzzer: json-c may count the terminating NUL as parsed (here
         * after an unterminated comment), and the trailing-data check read past it. */
        static const char *const docs[] = {
                "{\"daemon\":{\"pid\":1},\"devices\":[]}//",
                "{\"daemon\":{\"pid\":1},\"devices\":[]}/*",
                "{\"daemon\":{\"pid\":1},\"devices\":[]} ",
                "1//",
        };
        for (size_t i = 0; i < ELEMENTSOF(docs); i++) {
                Status s = {};
                char *err = NULL;
                int r = status_parse(docs[i], &s, &err);
                ASSERT_TRUE(r == 0 || r == -EBADMSG);
                status_done(&s);
                free(err);
        }
}

static void no_check(void *userdata) {
}

/* What the daemon's Publisher writes is what `iotunectl status` reads: the
 * counters of a DriftCheck and irqbalance's state, under a --root. */
TEST(publisher_writes_what_status_reads) {
        char *root = tmpdir_new(), *path = path_join(root, IOTUNED_RUN_DIR "/status.json"), *text = NULL, *err = NULL;
        static const unsigned banned[] = { 40, 41 };
        Config c = { .reassert_usec = 5 * USEC_PER_SEC };
        Plan plan = {};
        sd_event *e = NULL;
        Publisher *p = NULL;
        DriftCheck *dc = NULL;
        Status st = {};

        ASSERT_TRUE(path);
        tmpdir_write(root, IOTUNED_RUN_DIR "/.keep", "");
        ASSERT_INT_EQ(sd_event_new(&e), 0);
        ASSERT_INT_EQ(publisher_new(e, root, &p), 0);
        ASSERT_INT_EQ(drift_check_new(e, no_check, NULL, &dc), 0);
        drift_check_count_drift(dc, false);
        drift_check_count_drift(dc, true);
        drift_check_published(dc, 7);
        const DriftCounts *n = drift_check_counts(dc);
        PublishState s = {
                .config = &c,
                .plan = &plan,
                .drifts_corrected = n->drifts_corrected,
                .conflicts = n->conflicts,
                .last_check_usec = n->last_check_usec,
                .irqbalance_pid = 812,
                .irqbalance_state = "pid 812: 2 IRQs banned by iotuned",
                .banned = banned,
                .n_banned = ELEMENTSOF(banned),
        };
        publisher_write_status(p, &s);
        ASSERT_INT_EQ(read_full_file(path, STATUS_FILE_MAX, &text), 0);
        ASSERT_INT_EQ(status_parse(text, &st, &err), 0);
        ASSERT_INT_EQ(st.pid, (int) getpid());
        ASSERT_INT_EQ(st.drifts_corrected, 2);
        ASSERT_INT_EQ(st.conflicts, 1);
        ASSERT_STREQ(st.irqbalance_state, "pid 812: 2 IRQs banned by iotuned");
        ASSERT_INT_EQ(st.n_devices, 0);
        ASSERT_TRUE(strstr(text, "\"banned_by_iotuned\":[") != NULL);
        ASSERT_TRUE(strstr(text, "\"last_check_realtime_usec\":7") != NULL);

        /* Marked once, taken once. */
        ASSERT_TRUE(!publisher_take_dirty(p));
        publisher_mark_dirty(p);
        ASSERT_TRUE(publisher_take_dirty(p));
        ASSERT_TRUE(!publisher_take_dirty(p));

        publisher_unpublish(p, &c);
        ASSERT_TRUE(access(path, F_OK) < 0 && errno == ENOENT);

        status_done(&st);
        free(text);
        free(err);
        free(path);
        drift_check_free(dc);
        publisher_free(p);
        sd_event_unref(e);
        tmpdir_remove(root);
}

TEST_MAIN(T(good_document), T(writer_conflict_and_findings), T(multipath_path), T(minimal_document), T(malformed_documents_name_the_member),
          T(pid_out_of_range_is_not_running), T(never_reads_past_the_end),
          T(publisher_writes_what_status_reads))
