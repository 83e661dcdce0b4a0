/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* /sys/block/X/stat (Documentation/block/stat.rst): the counters this reads,
 * and what two samples of them say about the load on a disk. */
typedef struct BlockStat {
        uint64_t ios[2];      /* completed reads, writes */
        uint64_t sectors[2];  /* 512-byte sectors read, written */
        uint64_t ticks_ms[2]; /* ms spent by reads, writes */
        uint64_t in_flight;
        uint64_t io_ticks_ms; /* ms with at least one request in flight */
        uint64_t time_in_queue_ms;
        uint64_t sampled_usec; /* CLOCK_MONOTONIC when read */
} BlockStat;

/* Parse the text of a stat file: 11, 15 or 17 unsigned decimal fields (the
 * kernel added discards in 4.18 and flushes in 5.5). -EBADMSG otherwise. */
int blockstat_parse(const char *text, BlockStat *ret);

/* Read <disk_syspath>/stat (a regular sysfs file of at most 4 KiB). */
int blockstat_read(const char *disk_syspath, BlockStat *ret);

/* <disk_syspath>/inflight: reads and writes at the device now (blk-mq: started
 * and not completed; requests waiting in a scheduler are not counted). */
int blockstat_read_inflight(const char *disk_syspath, unsigned *ret);

/* /proc/diskstats (block/genhd.c diskstats_show): every disk's stat in one
 * read, where reading each disk's stat file costs an open per disk. A line is
 * "<major> <minor> <name>" and the fields of a stat file (11, 15 or 17). */
typedef struct DiskStat {
        char name[32]; /* DISK_NAME_LEN */
        BlockStat stat;
        size_t line;   /* where in the text it was (1 = the first line) */
} DiskStat;

typedef struct DiskStats {
        DiskStat *items; /* sorted by name, each name once */
        size_t n;
} DiskStats;

#define DISKSTATS_FILE_MAX (16u << 20)
#define DISKSTATS_LINE_MAX 512u
#define DISKSTATS_ENTRIES_MAX 65536u

/* Parse the text of /proc/diskstats (modified: lines are cut in place); every
 * entry is stamped `sampled_usec`. For hostile input a line is skipped, never
 * guessed at, when its major or minor is not an unsigned decimal, its name is
 * empty or DISK_NAME_LEN long or more, its fields do not parse as a stat file's,
 * or it is longer than DISKSTATS_LINE_MAX; of a name repeated, the first line
 * counts. More than DISKSTATS_ENTRIES_MAX disks is -E2BIG; -ENOMEM. */
int diskstats_parse(char *text, uint64_t sampled_usec, DiskStats *ret);

/* The entry of disk `name`, or NULL. */
const BlockStat *diskstats_find(const DiskStats *s, const char *name);

void diskstats_done(DiskStats *s);

typedef struct BlockLoad {
        double seconds;     /* between the samples */
        double iops;        /* reads and writes completed per second */
        double utilisation; /* share of the time with I/O in flight, 0..1 */
        double queue_depth; /* average requests in flight (time_in_queue / time) */
        double await_ms;    /* average time per completed I/O */
} BlockLoad;

/* The load between two samples of one disk; -EINVAL when `b` is not after `a`
 * or a counter went backwards (the disk was replaced in between). */
int blockstat_load(const BlockStat *a, const BlockStat *b, BlockLoad *ret);
