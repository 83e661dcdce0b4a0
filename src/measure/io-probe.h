/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "histogram.h"

/* The read-only load of `iotunectl tune`: O_DIRECT random reads through
 * io_uring (liburing), a fixed number in flight, for a fixed time. It opens the
 * disk O_RDONLY and only ever submits IORING_OP_READ: it cannot write. */

typedef struct ProbeSpec {
        unsigned block_size;   /* bytes per read: a multiple of the disk's logical block size */
        unsigned depth;        /* reads in flight, 1..IO_PROBE_MAX_DEPTH */
        uint64_t offset;       /* the byte range read from */
        uint64_t length;       /* 0: from offset to the end of the disk */
        uint64_t warmup_usec;  /* reads done but not counted, first */
        uint64_t runtime_usec; /* then counted for this long */
        bool hipri;            /* polled completions (IORING_SETUP_IOPOLL): the disk needs poll queues */
        uint64_t seed;         /* offsets are a function of the seed: reproducible runs */
} ProbeSpec;

#define IO_PROBE_MAX_DEPTH 1024

typedef struct ProbeResult {
        Histogram latency; /* submission to completion of each counted read, ns */
        uint64_t reads;
        uint64_t elapsed_usec;
        double iops;
} ProbeResult;

typedef struct ProbeDisk {
        int fd;
        uint64_t size;          /* bytes (BLKGETSIZE64) */
        unsigned logical_block; /* BLKSSZGET */
} ProbeDisk;

/* Open `devnode` O_RDONLY|O_DIRECT; -ENOTBLK when it is not a block device. */
int io_probe_open(const char *devnode, ProbeDisk *ret);
void io_probe_close(ProbeDisk *d);

/* Check a spec against the disk: -EINVAL with *ret_why set (static text) when
 * the block size, range or depth cannot be used. */
int io_probe_check(const ProbeDisk *d, const ProbeSpec *s, const char **ret_why);

/* Run one probe. `stop` (may be NULL) ends it early when set (a signal):
 * -EINTR. A read that fails or comes back short is -EIO (its errno in
 * *ret_error when not NULL). */
int io_probe_run(const ProbeDisk *d, const ProbeSpec *s, const volatile sig_atomic_t *stop, ProbeResult *ret,
                 int *ret_error);
