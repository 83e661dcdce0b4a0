/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io-probe.h"
#include "macro.h"
#include "util.h"

int io_probe_open(const char *devnode, ProbeDisk *ret) {
        struct stat st;
        int lbs = 0;

        assert(devnode);
        assert(ret);

        /* O_RDONLY: the kernel refuses any write on this descriptor, whatever is
         * submitted through it. */
        _cleanup_close_ int fd = open(devnode, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISBLK(st.st_mode))
                return -ENOTBLK;
        if (ioctl(fd, BLKGETSIZE64, &ret->size) < 0 || ioctl(fd, BLKSSZGET, &lbs) < 0)
                return -errno;
        if (lbs <= 0 || ret->size == 0)
                return -ENODATA;
        ret->logical_block = (unsigned) lbs;
        ret->fd = TAKE_FD(fd);
        return 0;
}

void io_probe_close(ProbeDisk *d) {
        assert(d);
        if (d->fd >= 0)
                (void) close(d->fd);
        d->fd = -1;
}

static uint64_t range_end(const ProbeDisk *d, const ProbeSpec *s) {
        return s->length ? s->offset + s->length : d->size;
}

int io_probe_check(const ProbeDisk *d, const ProbeSpec *s, const char **ret_why) {
        assert(d);
        assert(s);
        assert(ret_why);

        *ret_why = NULL;
        if (s->block_size == 0 || s->block_size % d->logical_block != 0 || s->block_size > 16U << 20)
                *ret_why = "the block size must be a multiple of the disk's logical block size, at most 16M";
        else if (s->depth < 1 || s->depth > IO_PROBE_MAX_DEPTH)
                *ret_why = "the queue depth must be 1-1024";
        else if (s->offset % d->logical_block != 0 || s->length % d->logical_block != 0)
                *ret_why = "the range must be aligned to the disk's logical block size";
        else if (s->offset >= d->size || (s->length && (s->length > d->size - s->offset)))
                *ret_why = "the range ends beyond the disk";
        else if (range_end(d, s) - s->offset < s->block_size)
                *ret_why = "the range is smaller than one block";
        return *ret_why ? -EINVAL : 0;
}

static uint64_t mono_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* splitmix64: offsets that look random to the disk, and repeat with the seed. */
static uint64_t next_offset(uint64_t *state, uint64_t first, uint64_t blocks, unsigned bs) {
        uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        return first + (z % blocks) * bs;
}

typedef struct Slot {
        void *buf;
        uint64_t submitted_nsec;
} Slot;

static void queue_read(struct io_uring *ring, const ProbeDisk *d, const ProbeSpec *s, Slot *slots, unsigned i,
                       uint64_t *state, uint64_t blocks, uint64_t now) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
        assert(sqe); /* the ring has `depth` entries and at most `depth` are queued */
        io_uring_prep_read(sqe, d->fd, slots[i].buf, s->block_size,
                           next_offset(state, s->offset, blocks, s->block_size));
        io_uring_sqe_set_data64(sqe, i);
        slots[i].submitted_nsec = now;
}

int io_probe_run(const ProbeDisk *d, const ProbeSpec *s, const volatile sig_atomic_t *stop, ProbeResult *ret,
                 int *ret_error) {
        struct io_uring ring;
        const char *why;
        int r;

        assert(d);
        assert(s);
        assert(ret);

        r = io_probe_check(d, s, &why);
        if (r < 0)
                return r;
        uint64_t blocks = (range_end(d, s) - s->offset) / s->block_size;
        uint64_t state = s->seed;

        Slot *slots = calloc(s->depth, sizeof(Slot));
        if (!slots)
                return -ENOMEM;
        for (unsigned i = 0; i < s->depth; i++)
                if (posix_memalign(&slots[i].buf, 4096, s->block_size) != 0) {
                        r = -ENOMEM;
                        goto out_free;
                }

        r = io_uring_queue_init(s->depth, &ring, s->hipri ? IORING_SETUP_IOPOLL : 0);
        if (r < 0)
                goto out_free;

        memset(ret, 0, sizeof(*ret));
        hist_init(&ret->latency);
        uint64_t start = mono_nsec();
        uint64_t counting_from = start + s->warmup_usec * 1000ULL;
        uint64_t end = counting_from + s->runtime_usec * 1000ULL;
        unsigned in_flight = 0;
        bool draining = false;
        int failed = 0;

        for (unsigned i = 0; i < s->depth; i++)
                queue_read(&ring, d, s, slots, i, &state, blocks, start);
        r = io_uring_submit(&ring);
        if (r < 0)
                goto out_ring;
        in_flight = s->depth;

        /* One completion at a time, its replacement submitted at once (one
         * io_uring_enter per read, as an application that issues each read when
         * it needs it, and as fio's defaults): the software path is paid per read,
         * which is what the knobs measured change. */
        while (in_flight > 0) {
                struct io_uring_cqe *cqe;

                r = io_uring_wait_cqe(&ring, &cqe);
                if (r == -EINTR)
                        continue; /* `stop` is looked at below */
                if (r < 0)
                        goto out_ring;
                uint64_t now = mono_nsec();
                unsigned i = (unsigned) io_uring_cqe_get_data64(cqe);
                int res = cqe->res;
                io_uring_cqe_seen(&ring, cqe);
                in_flight--;
                if (res != (int) s->block_size) {
                        if (ret_error)
                                *ret_error = res < 0 ? res : -EIO;
                        failed = -EIO;
                        draining = true;
                        continue;
                }
                if (slots[i].submitted_nsec >= counting_from && now <= end) {
                        hist_record(&ret->latency, now - slots[i].submitted_nsec);
                        ret->reads++;
                }
                if (stop && *stop)
                        draining = true;
                if (draining || now >= end)
                        continue;
                queue_read(&ring, d, s, slots, i, &state, blocks, mono_nsec());
                int q = io_uring_submit(&ring);
                if (q < 0) {
                        failed = q;
                        draining = true;
                } else
                        in_flight++;
        }
        if (failed < 0) {
                r = failed;
                goto out_ring;
        }
        if (stop && *stop) {
                r = -EINTR;
                goto out_ring;
        }
        ret->elapsed_usec = s->runtime_usec;
        ret->iops = s->runtime_usec ? (double) ret->reads * 1e6 / (double) s->runtime_usec : 0;
        r = 0;
out_ring:
        io_uring_queue_exit(&ring);
out_free:
        for (unsigned i = 0; i < s->depth; i++)
                free(slots[i].buf);
        free(slots);
        return r;
}
