/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The originals record: recorded under an exclusive lock (two writers never lose
 * or overwrite an original), read back as untrusted input (a malformed record is
 * an error and is never replaced). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "originals.h"
#include "plan.h"
#include "tests.h"
#include "tmpdir.h"

/* A disk "sda" under <tmp>/sys with rq_affinity=1, and vectors 36 and 37 under
 * <tmp>/proc/irq with affinity 0-3. */
static char *fake_tree(void) {
        char *t = tmpdir_new();
        tmpdir_write(t, "sys/block/sda/queue/rq_affinity", "1\n");
        tmpdir_write(t, "sys/block/sda/queue/nomerges", "0\n");
        tmpdir_write(t, "proc/irq/36/smp_affinity_list", "0-3\n");
        tmpdir_write(t, "proc/irq/37/smp_affinity_list", "0-3\n");
        return t;
}

/* A SATA disk "sda" of the fake tree, planned with `values` (and one vector). */
static DevicePlan *plan_with(const char *tree, char *const values[_KNOB_MAX], const char *irq_value) {
        Device *d = calloc(1, sizeof(Device));
        char *irqs[] = { (char *) irq_value, NULL };
        DevicePlan *p = NULL;
        if (!d)
                abort();
        d->name = strdup("sda");
        d->syspath = path_join(tree, "sys/block/sda");
        d->transport = strdup("sata");
        d->numa_node = -1;
        d->has_mq = true;
        if (!d->name || !d->syspath || !d->transport ||
            plan_device_from_values(d, "test", values, irq_value ? irqs : NULL, tree, &p) < 0)
                abort();
        return p;
}

static DevicePlan *plan_for(const char *tree, const char *irq_value) {
        char *values[_KNOB_MAX] = { [KNOB_RQ_AFFINITY] = (char *) "2" }; /* what child() writes */
        return plan_with(tree, values, irq_value);
}

static void child(const char *tree, const char *dir, const char *irq_value, const char *irq) {
        DevicePlan *p = plan_for(tree, irq_value);
        _cleanup_free_ char *attr = path_join(tree, "sys/block/sda/queue/rq_affinity"), *ipath = NULL;
        int r = originals_record(dir, p);
        /* Then tune, as apply does once the originals are safe. */
        if (asprintf(&ipath, "%s/proc/irq/%s/smp_affinity_list", tree, irq) < 0 || write_attr(attr, "2") < 0 ||
            write_attr(ipath, "1") < 0)
                _exit(3);
        device_plan_free(p);
        _exit(r < 0 ? 2 : 0);
}

TEST(concurrent_writers_keep_every_original) {
        for (int round = 0; round < 25; round++) {
                char *tree = fake_tree();
                _cleanup_free_ char *dir = path_join(tree, "run/iotuned/originals");
                char *values[_KNOB_MAX];
                char **irqs = NULL;
                pid_t a, b;
                int sa, sb;
                Device *d;

                a = fork();
                if (a == 0)
                        child(tree, dir, "36=0", "36");
                b = fork();
                if (b == 0)
                        child(tree, dir, "37=0", "37");
                ASSERT_TRUE(a > 0 && b > 0);
                ASSERT_INT_EQ(waitpid(a, &sa, 0), a);
                ASSERT_INT_EQ(waitpid(b, &sb, 0), b);
                ASSERT_TRUE(WIFEXITED(sa) && WEXITSTATUS(sa) == 0);
                ASSERT_TRUE(WIFEXITED(sb) && WEXITSTATUS(sb) == 0);

                d = calloc(1, sizeof(Device));
                ASSERT_TRUE(d);
                d->name = strdup("sda");
                ASSERT_INT_EQ(originals_load(dir, d, values, &irqs), 0);
                /* Whichever came second saw the first one's record: never a tuned value. */
                ASSERT_STREQ(values[KNOB_RQ_AFFINITY], "1");
                ASSERT_INT_EQ(strv_length(irqs), 2);
                ASSERT_TRUE(strv_contains(irqs, "36=0-3"));
                ASSERT_TRUE(strv_contains(irqs, "37=0-3"));
                for (size_t k = 0; k < _KNOB_MAX; k++)
                        free(values[k]);
                strv_free(irqs);
                device_free(d);
                tmpdir_remove(tree);
        }
}

TEST(lock_file_is_private_and_not_followed) {
        char *tree = tmpdir_new();
        _cleanup_free_ char *dir = path_join(tree, "run/iotuned/originals"),
                            *lock = path_join(tree, "run/iotuned/originals.lock");
        struct stat st;
        int fd = -1;
        ASSERT_INT_EQ(originals_lock(dir, &fd), 0);
        ASSERT_TRUE(fd >= 0);
        close(fd);
        ASSERT_INT_EQ(stat(lock, &st), 0);
        ASSERT_INT_EQ(st.st_mode & 07777, 0600);
        ASSERT_INT_EQ(unlink(lock), 0);
        ASSERT_INT_EQ(symlink("/etc/passwd", lock), 0);
        ASSERT_INT_EQ(originals_lock(dir, &fd), -ELOOP);
        ASSERT_INT_EQ(unlink(lock), 0);
        ASSERT_INT_EQ(mkfifo(lock, 0600), 0);
        ASSERT_INT_EQ(originals_lock(dir, &fd), -EBADFD);
        tmpdir_remove(tree);
}

static const char *const malformed[] = {
        "not json",
        "[]",
        "{}",
        "{\"version\":2,\"device\":\"sda\"}",
        "{\"version\":\"1\",\"device\":\"sda\"}",
        "{\"version\":1,\"device\":7}",
        "{\"version\":1,\"device\":\"sda\",\"values\":[]}",
        "{\"version\":1,\"device\":\"sda\",\"values\":{\"rq_affinity\":2}}",
        "{\"version\":1,\"device\":\"sda\",\"values\":{\"rq_affinity\":null}}",
        "{\"version\":1,\"device\":\"sda\",\"irqs\":\"36=1\"}",
        "{\"version\":1,\"device\":\"sda\",\"irqs\":{\"4294967332\":\"1\"}}",
        "{\"version\":1,\"device\":\"sda\",\"irqs\":{\"-1\":\"1\"}}",
        "{\"version\":1,\"device\":\"sda\",\"irqs\":{\"36\":[]}}",
        "{\"version\":1,\"device\":\"sda\",\"diskseq\":5}",
        "{\"version\":1,\"device\":\"sda\"} trailing",
};

TEST(malformed_record_is_an_error_and_kept) {
        for (size_t i = 0; i < ELEMENTSOF(malformed); i++) {
                char *tree = fake_tree();
                _cleanup_free_ char *dir = path_join(tree, "run/iotuned/originals"), *text = NULL,
                                    *rec = path_join(tree, "run/iotuned/originals/sda.json");
                DevicePlan *p = plan_for(tree, "36=0");
                char *values[_KNOB_MAX];
                int r;

                tmpdir_write(tree, "run/iotuned/originals/sda.json", malformed[i]);
                r = originals_record(dir, p);
                if (r != -EBADMSG)
                        fprintf(stderr, "# record %zu: %d\n", i, r);
                ASSERT_INT_EQ(r, -EBADMSG);
                ASSERT_INT_EQ(originals_load(dir, p->device, values, NULL), -EBADMSG);
                ASSERT_INT_EQ(read_full_file(rec, 4096, &text), 0);
                ASSERT_STREQ(text, malformed[i]);
                ASSERT_TRUE(strstr(originals_strerror(-EBADMSG), "not a valid originals record"));
                device_plan_free(p);
                tmpdir_remove(tree);
        }
}

TEST(record_never_read_past_its_end) {
        /* json-c may count the terminating NUL as parsed (an unterminated comment):
         * the trailing-data check must not read past it (found by libFuzzer). */
        char *tree = fake_tree();
        _cleanup_free_ char *dir = path_join(tree, "run/iotuned/originals");
        DevicePlan *p = plan_for(tree, NULL);
        char *values[_KNOB_MAX];
        int r;
        tmpdir_write(tree, "run/iotuned/originals/sda.json", "{\"version\":1,\"device\":\"sda\",\"values\":{}}/*");
        r = originals_load(dir, p->device, values, NULL);
        if (r == 0)
                for (size_t k = 0; k < _KNOB_MAX; k++)
                        free(values[k]);
        device_plan_free(p);
        tmpdir_remove(tree);
        ASSERT_TRUE(r == 0 || r == -EBADMSG);
}

TEST(record_that_is_a_link_or_fifo_is_refused) {
        char *tree = fake_tree();
        _cleanup_free_ char *dir = path_join(tree, "run/iotuned/originals"),
                            *rec = path_join(tree, "run/iotuned/originals/sda.json");
        DevicePlan *p = plan_for(tree, NULL);
        ASSERT_INT_EQ(mkdir_p(dir, 0755), 0);
        ASSERT_INT_EQ(symlink("/etc/passwd", rec), 0);
        ASSERT_INT_EQ(originals_record(dir, p), -ELOOP);
        ASSERT_INT_EQ(unlink(rec), 0);
        ASSERT_INT_EQ(mkfifo(rec, 0600), 0);
        ASSERT_INT_EQ(originals_record(dir, p), -EBADFD);
        device_plan_free(p);
        tmpdir_remove(tree);
}

TEST(record_written_with_exclusive_temporary) {
        /* A link planted at the old fixed temporary name is never written through. */
        char *tree = fake_tree();
        _cleanup_free_ char *dir = path_join(tree, "run/iotuned/originals"), *canary = path_join(tree, "canary"),
                            *text = NULL;
        DevicePlan *p = plan_for(tree, NULL);
        tmpdir_write(tree, "canary", "untouched");
        ASSERT_INT_EQ(mkdir_p(dir, 0755), 0);
        tmpdir_symlink(tree, "run/iotuned/originals/sda.json.tmp", canary);
        tmpdir_symlink(tree, "run/iotuned/originals/.sda.json.tmp", canary);
        ASSERT_INT_EQ(originals_record(dir, p), 0);
        ASSERT_INT_EQ(read_full_file(canary, 4096, &text), 0);
        ASSERT_STREQ(text, "untouched");
        device_plan_free(p);
        tmpdir_remove(tree);
}

TEST(temporaries_of_a_killed_writer_are_removed) {
        /* SIGKILL between writing NAME.json.tmp.* and its rename leaves it behind
         * (tests/vm faults); the next start removes it, and nothing else. */
        char *tree = fake_tree();
        _cleanup_free_ char *dir = path_join(tree, "run/iotuned/originals"), *record = NULL, *tmp = NULL,
                            *canary = path_join(tree, "canary"), *text = NULL;
        DevicePlan *p = plan_for(tree, NULL);

        ASSERT_INT_EQ(originals_remove_temporaries(dir), 0); /* no directory yet */
        ASSERT_INT_EQ(mkdir_p(dir, 0755), 0);
        ASSERT_INT_EQ(originals_record(dir, p), 0);
        tmpdir_write(tree, "run/iotuned/originals/nullb14.json.tmp.b9f2a905086f95a0", "{\"devi");
        tmpdir_write(tree, "run/iotuned/originals/sda.json.tmp.0000000000000001", "");
        tmpdir_write(tree, "canary", "untouched");
        tmpdir_symlink(tree, "run/iotuned/originals/vda.json.tmp.0000000000000002", canary);
        ASSERT_INT_EQ(originals_remove_temporaries(dir), 3);
        ASSERT_INT_EQ(originals_remove_temporaries(dir), 0);
        record = path_join(dir, "sda.json");
        tmp = path_join(dir, "nullb14.json.tmp.b9f2a905086f95a0");
        ASSERT_TRUE(access(record, F_OK) == 0);
        ASSERT_TRUE(access(tmp, F_OK) < 0 && errno == ENOENT);
        ASSERT_INT_EQ(read_full_file(canary, 4096, &text), 0); /* a link goes, not its target */
        ASSERT_STREQ(text, "untouched");
        device_plan_free(p);
        tmpdir_remove(tree);
}

/* Only what the plan's writes can change is recorded: the rows it plans, and
 * nr_requests and wbt_lat_usec beside a scheduler (the switch changes them);
 * a row planned later, by a reload, is added with the value it has then, and the
 * first original of a row stays. */
/* The queue rows a scheduler plan touches, at values the tests know. */
static void write_queue_rows(const char *tree) {
        tmpdir_write(tree, "sys/block/sda/queue/scheduler", "[mq-deadline] none\n");
        tmpdir_write(tree, "sys/block/sda/queue/nr_requests", "64\n");
        tmpdir_write(tree, "sys/block/sda/queue/wbt_lat_usec", "75000\n");
        tmpdir_write(tree, "sys/block/sda/queue/read_ahead_kb", "128\n");
}

TEST(only_the_rows_the_plan_can_change_are_recorded) {
        char *tree = fake_tree();
        _cleanup_free_ char *dir = path_join(tree, "run/iotuned/originals");
        char *read_ahead[_KNOB_MAX] = { [KNOB_READ_AHEAD_KB] = (char *) "512" };
        char *sched[_KNOB_MAX] = { [KNOB_SCHEDULER] = (char *) "none", [KNOB_READ_AHEAD_KB] = (char *) "512" };
        char *values[_KNOB_MAX];
        DevicePlan *p;
        Device *d;

        write_queue_rows(tree);
        tmpdir_write(tree, "sys/block/sda/queue/add_random", "1\n");

        p = plan_with(tree, read_ahead, NULL);
        ASSERT_INT_EQ(originals_record(dir, p), 0);
        device_plan_free(p);
        d = calloc(1, sizeof(Device));
        ASSERT_TRUE(d);
        d->name = strdup("sda");
        ASSERT_INT_EQ(originals_load(dir, d, values, NULL), 0);
        for (size_t k = 0; k < _KNOB_MAX; k++) {
                if (k == KNOB_READ_AHEAD_KB)
                        ASSERT_STREQ(values[k], "128");
                else
                        ASSERT_TRUE(!values[k]); /* not planned: neither read nor kept */
                free(values[k]);
        }

        /* The tuned read-ahead stays recorded as it was; the scheduler, planned
         * now, comes with the two rows its switch changes. */
        tmpdir_write(tree, "sys/block/sda/queue/read_ahead_kb", "512\n");
        p = plan_with(tree, sched, NULL);
        ASSERT_INT_EQ(originals_record(dir, p), 0);
        device_plan_free(p);
        ASSERT_INT_EQ(originals_load(dir, d, values, NULL), 0);
        ASSERT_STREQ(values[KNOB_READ_AHEAD_KB], "128");
        ASSERT_STREQ(values[KNOB_SCHEDULER], "mq-deadline");
        ASSERT_STREQ(values[KNOB_NR_REQUESTS], "64");
        ASSERT_STREQ(values[KNOB_WBT_LAT_USEC], "75000");
        ASSERT_TRUE(!values[KNOB_ADD_RANDOM] && !values[KNOB_RQ_AFFINITY] && !values[KNOB_NOMERGES]);
        for (size_t k = 0; k < _KNOB_MAX; k++)
                free(values[k]);
        device_free(d);
        tmpdir_remove(tree);
}

/* Rows the caller read a moment ago, before its first write (reconcile reads each
 * row before deciding to write it), are recorded as given, not read again; the
 * rest the plan touches are read. The fixture disagrees with the values given,
 * so a second read would show. */
TEST(rows_read_just_now_are_recorded_as_given) {
        char *tree = fake_tree();
        _cleanup_free_ char *dir = path_join(tree, "run/iotuned/originals");
        char *sched[_KNOB_MAX] = { [KNOB_SCHEDULER] = (char *) "none", [KNOB_READ_AHEAD_KB] = (char *) "512" };
        const char *read_now[_KNOB_MAX] = { [KNOB_SCHEDULER] = "kyber", [KNOB_NR_REQUESTS] = "256" };
        char *values[_KNOB_MAX];
        _cleanup_close_ int lock = -1;
        DevicePlan *p;
        Device *d;

        write_queue_rows(tree);

        p = plan_with(tree, sched, NULL);
        ASSERT_INT_EQ(originals_lock(dir, &lock), 0);
        ASSERT_INT_EQ(originals_record_locked(dir, p, read_now), 0);
        device_plan_free(p);
        d = calloc(1, sizeof(Device));
        ASSERT_TRUE(d);
        d->name = strdup("sda");
        ASSERT_INT_EQ(originals_load(dir, d, values, NULL), 0);
        ASSERT_STREQ(values[KNOB_SCHEDULER], "kyber");
        ASSERT_STREQ(values[KNOB_NR_REQUESTS], "256");
        ASSERT_STREQ(values[KNOB_WBT_LAT_USEC], "75000");
        ASSERT_STREQ(values[KNOB_READ_AHEAD_KB], "128");
        for (size_t k = 0; k < _KNOB_MAX; k++)
                free(values[k]);

        /* Known rows are not re-recorded: the first original wins over a value
         * given later. */
        read_now[KNOB_READ_AHEAD_KB] = "4096";
        p = plan_with(tree, sched, NULL);
        ASSERT_INT_EQ(originals_record_locked(dir, p, read_now), 0);
        device_plan_free(p);
        ASSERT_INT_EQ(originals_load(dir, d, values, NULL), 0);
        ASSERT_STREQ(values[KNOB_READ_AHEAD_KB], "128");
        for (size_t k = 0; k < _KNOB_MAX; k++)
                free(values[k]);
        device_free(d);
        tmpdir_remove(tree);
}

TEST_MAIN(T(concurrent_writers_keep_every_original), T(lock_file_is_private_and_not_followed),
          T(malformed_record_is_an_error_and_kept), T(record_never_read_past_its_end),
          T(record_that_is_a_link_or_fifo_is_refused),
          T(record_written_with_exclusive_temporary), T(temporaries_of_a_killed_writer_are_removed),
          T(only_the_rows_the_plan_can_change_are_recorded), T(rows_read_just_now_are_recorded_as_given))
