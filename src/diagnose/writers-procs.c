/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Writers: the processes that write a disk's knobs (irqbalance, another iotuned). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knob.h"
#include "macro.h"
#include "rootfs.h"
#include "util.h"
#include "writers-internal.h"

#define PROC_ENTRIES_MAX 65536       /* /proc entries looked at */

void writers_procs_done(Procs *p) {
        free(p->tuned);
        free(p->irqbalance);
        free(p->iotuned);
}

static int pid_push(int **v, size_t *n, int pid) {
        int *nv = realloc(*v, (*n + 1) * sizeof(int));
        if (!nv)
                return -ENOMEM;
        *v = nv;
        (*v)[(*n)++] = pid;
        return 0;
}

static int int_cmp(const void *a, const void *b) {
        int x = *(const int *) a, y = *(const int *) b;
        return (x > y) - (x < y);
}

int writers_procs_scan(const char *root, Procs *ret) {
        _cleanup_close_ int fd = -1;
        struct dirent *de;
        unsigned seen = 0;
        DIR *dir;
        int r = 0;

        *ret = (Procs){};
        fd = root_open(root, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (fd < 0)
                return 0;
        dir = fdopendir(fd);
        if (!dir)
                return 0;
        fd = -1;
        ret->readable = true;
        while ((de = readdir(dir)) && seen++ < PROC_ENTRIES_MAX) {
                _cleanup_free_ char *path = NULL, *comm = NULL;
                int pid;

                if (safe_atoi(de->d_name, &pid) < 0 || pid <= 0)
                        continue;
                if (asprintf_safe(&path, "/proc/%d/comm", pid) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (root_read_file(root, path, 64, &comm) < 0)
                        continue; /* gone, or not readable */
                strstrip(comm);
                if (streq(comm, "tuned"))
                        r = pid_push(&ret->tuned, &ret->n_tuned, pid);
                else if (streq(comm, "irqbalance"))
                        r = pid_push(&ret->irqbalance, &ret->n_irqbalance, pid);
                else if (streq(comm, "iotuned") && pid != getpid())
                        r = pid_push(&ret->iotuned, &ret->n_iotuned, pid);
                if (r < 0)
                        break;
        }
        closedir(dir);
        if (r < 0) {
                writers_procs_done(ret);
                return r;
        }
        if (ret->n_tuned)
                qsort(ret->tuned, ret->n_tuned, sizeof(int), int_cmp);
        if (ret->n_irqbalance)
                qsort(ret->irqbalance, ret->n_irqbalance, sizeof(int), int_cmp);
        if (ret->n_iotuned)
                qsort(ret->iotuned, ret->n_iotuned, sizeof(int), int_cmp);
        return 0;
}

int writers_process_writers(const Procs *p, WriterList *out) {
        /* The caller is the daemon: any other iotuned fights it. The caller is
         * iotunectl: one iotuned is the daemon, two or more fight each other. */
        size_t threshold = streq(program_invocation_short_name, "iotuned") ? 1 : 2;
        int r;

        for (size_t i = 0; i < p->n_irqbalance; i++) {
                _cleanup_free_ char *who = NULL;
                if (asprintf_safe(&who, "irqbalance (pid %d)", p->irqbalance[i]) < 0)
                        return -ENOMEM;
                r = writer_add(
                        out,
                        &(Writer){
                                .kind = WRITER_IRQBALANCE,
                                .who = who,
                                .knob = (char *) knob_get(KNOB_IRQ_AFFINITY)->name,
                                .match = WRITER_MATCH_YES,
                                .why = (char *) "moves vectors it has not been told to leave alone (banned)",
                        });
                if (r < 0)
                        return r;
        }
        if (p->n_iotuned < threshold)
                return 0;
        for (size_t i = 0; i < p->n_iotuned; i++) {
                _cleanup_free_ char *who = NULL;
                if (asprintf_safe(&who, "another iotuned (pid %d)", p->iotuned[i]) < 0)
                        return -ENOMEM;
                r = writer_add(
                        out, &(Writer){
                                     .kind = WRITER_IOTUNED,
                                     .who = who,
                                     .knob = (char *) "*",
                                     .match = WRITER_MATCH_YES,
                                     .why = (char *) (threshold == 1
                                                              ? "a second iotuned tunes the same disks"
                                                              : "more than one iotuned runs; they tune the same disks"),
                             });
                if (r < 0)
                        return r;
        }
        return 0;
}
