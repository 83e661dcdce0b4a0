/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <glob.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "fileio.h"
#include "irqbalance.h"
#include "util.h"

/* irqbalance reads a command with one recv of up to this many bytes (and 1.9.3+
 * copies the IRQ list into a 256-byte buffer): longer ban lists are cut there. */
#define IRQBALANCE_CMD_MAX 1024
#define IRQBALANCE_BANS_VERSION 1

void irqbalance_done(IrqBalance *b) {
        assert(b);

        free(b->socket_path);
        *b = (IrqBalance) {};
}

int irqbalance_find(const char *root, IrqBalance *ret) {
        _cleanup_free_ char *pattern = NULL;
        glob_t g = {};
        int r = -ENOENT;

        assert(ret);

        if (asprintf_safe(&pattern, "%s/run/irqbalance/irqbalance*.sock", root ?: "") < 0)
                return -ENOMEM;
        if (glob(pattern, 0, NULL, &g) != 0) {
                globfree(&g);
                return -ENOENT;
        }
        /* Stale sockets of dead instances may linger: take one whose PID lives. */
        for (size_t i = 0; i < g.gl_pathc; i++) {
                const char *base = strrchr(g.gl_pathv[i], '/') + 1;
                char proc[64];
                int pid;
                if (sscanf(base, "irqbalance%d.sock", &pid) != 1 || pid <= 0)
                        continue;
                snprintf(proc, sizeof(proc), "/proc/%d", pid);
                if (access(proc, F_OK) < 0)
                        continue;
                ret->pid = pid;
                ret->socket_path = strdup(g.gl_pathv[i]);
                r = ret->socket_path ? 0 : -ENOMEM;
                break;
        }
        globfree(&g);
        return r;
}

/* Connect and send `cmd`. irqbalance answers from the loop that rebalances, and
 * a stopped (SIGSTOP) or stuck irqbalance still has the kernel queue our
 * connection and data until its backlog of one connection is full, after which a
 * blocking connect(2) would wait for ever. With timeout_ms, SO_SNDTIMEO bounds
 * that wait and the send (EAGAIN from either means the time ran out); without,
 * the socket does not block and a full backlog is -EAGAIN at once. */
int irqbalance_send(const IrqBalance *b, const char *cmd, unsigned timeout_ms) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(struct ucred))];
        } control = {};
        struct ucred cred = { .pid = getpid(), .uid = getuid(), .gid = getgid() };
        struct iovec iov = { .iov_base = (void *) cmd, .iov_len = strlen(cmd) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof(control) };
        struct cmsghdr *cm;
        _cleanup_close_ int fd = -1;

        assert(b);
        assert(cmd);

        if (strlen(b->socket_path) >= sizeof(sa.sun_path) || strlen(cmd) >= IRQBALANCE_CMD_MAX)
                return -E2BIG;
        strcpy(sa.sun_path, b->socket_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (timeout_ms ? 0 : SOCK_NONBLOCK), 0);
        if (fd < 0)
                return negative_errno();
        if (timeout_ms) {
                struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
                if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                        return negative_errno();
        }
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                if (errno == EAGAIN || errno == EINPROGRESS)
                        return timeout_ms ? -ETIMEDOUT : -EAGAIN;
                return negative_errno();
        }

        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_CREDENTIALS;
        cm->cmsg_len = CMSG_LEN(sizeof(cred));
        memcpy(CMSG_DATA(cm), &cred, sizeof(cred));
        /* A command is far smaller than a fresh connection's buffer: a send that
         * would block means the time ran out (or, without one, a peer that reads
         * nothing). */
        if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
                return errno == EAGAIN ? (timeout_ms ? -ETIMEDOUT : -EAGAIN) : negative_errno();
        return TAKE_FD(fd);
}

void irqbalance_reply_done(IrqBalanceReply *reply) {
        assert(reply);

        free(reply->text);
        *reply = (IrqBalanceReply) {};
}

int irqbalance_reply_read(int fd, IrqBalanceReply *reply) {
        assert(fd >= 0);
        assert(reply);

        if (!reply->text) {
                reply->text = malloc(IRQBALANCE_REPLY_MAX + 1);
                if (!reply->text)
                        return -ENOMEM;
                reply->len = 0;
        }
        for (;;) {
                ssize_t n = recv(fd, reply->text + reply->len, IRQBALANCE_REPLY_MAX - reply->len, MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN ? 0 : negative_errno();
                reply->len += n;
                /* irqbalance closes the connection after its answer; what does not fit
                 * is not read (a setup reply lists the IRQs first). */
                if (n == 0 || reply->len == IRQBALANCE_REPLY_MAX) {
                        reply->text[reply->len] = 0;
                        return 1;
                }
        }
}

/* One blocking exchange within timeout_ms (0: IRQBALANCE_TIMEOUT_MS). */
static int request(const IrqBalance *b, const char *cmd, unsigned timeout_ms, char **ret_reply) {
        _cleanup_(irqbalance_reply_done) IrqBalanceReply reply = {};
        _cleanup_close_ int fd = -1;
        uint64_t deadline;

        assert(b);
        assert(cmd);
        assert(ret_reply);

        if (timeout_ms == 0)
                timeout_ms = IRQBALANCE_TIMEOUT_MS;
        deadline = now_usec(CLOCK_MONOTONIC) / 1000 + timeout_ms;
        fd = irqbalance_send(b, cmd, timeout_ms);
        if (fd < 0)
                return fd;
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                uint64_t now = now_usec(CLOCK_MONOTONIC) / 1000;
                int q;
                if (now >= deadline)
                        return -ETIMEDOUT;
                q = poll(&p, 1, (int) MIN(deadline - now, (uint64_t) INT32_MAX));
                if (q < 0 && errno == EINTR)
                        continue;
                if (q <= 0)
                        return q == 0 ? -ETIMEDOUT : negative_errno();
                q = irqbalance_reply_read(fd, &reply);
                if (q < 0)
                        return q;
                if (q > 0)
                        break;
        }
        *ret_reply = TAKE_PTR(reply.text);
        return 0;
}

static int cmp_unsigned(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

int irqbalance_parse_setup(const char *reply, unsigned **ret, size_t *ret_n) {
        _cleanup_free_ char *copy = strdup(reply);
        _cleanup_free_ unsigned *irqs = NULL;
        char *save = NULL, *tok;
        size_t n = 0;
        bool next_is_irq = false, seen_sleep = false;

        assert(reply);
        assert(ret);
        assert(ret_n);

        if (!copy)
                return -ENOMEM;
        for (tok = strtok_r(copy, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
                if (streq(tok, "SLEEP"))
                        seen_sleep = true;
                if (next_is_irq) {
                        unsigned irq, *a;
                        if (safe_atou(tok, &irq) < 0)
                                return -EBADMSG;
                        a = realloc(irqs, (n + 1) * sizeof(unsigned));
                        if (!a)
                                return -ENOMEM;
                        irqs = a;
                        irqs[n++] = irq;
                }
                next_is_irq = streq(tok, "IRQ");
        }
        if (!seen_sleep)
                return -EBADMSG; /* not a setup reply */
        if (n > 1)
                qsort(irqs, n, sizeof(unsigned), cmp_unsigned);
        *ret = TAKE_PTR(irqs);
        *ret_n = n;
        return 0;
}

int irqbalance_get_banned(const IrqBalance *b, unsigned timeout_ms, unsigned **ret, size_t *ret_n) {
        _cleanup_free_ char *reply = NULL;
        int r = request(b, "setup", timeout_ms, &reply);

        assert(b);
        assert(ret);
        assert(ret_n);

        if (r < 0)
                return r;
        return irqbalance_parse_setup(reply, ret, ret_n);
}

int irqbalance_set_banned(const IrqBalance *b, unsigned timeout_ms, const unsigned *irqs, size_t n) {
        char cmd[IRQBALANCE_CMD_MAX];
        size_t off = snprintf(cmd, sizeof(cmd), "settings ban irqs");

        assert(b);

        if (n == 0)
                snprintf(cmd + off, sizeof(cmd) - off, " NONE");
        for (size_t i = 0; i < n; i++) {
                off += snprintf(cmd + off, sizeof(cmd) - off, " %u", irqs[i]);
                if (off >= sizeof(cmd))
                        return -E2BIG;
        }
        int fd = irqbalance_send(b, cmd, timeout_ms);
        if (fd < 0)
                return fd;
        close(fd);
        return 0;
}

/* ---- the record of our bans ---------------------------------------------------- */

static bool json_int_in_range(json_object *o, int64_t min, int64_t max, int64_t *ret) {
        int64_t v;

        assert(ret);

        if (!o || !json_object_is_type(o, json_type_int))
                return false;
        errno = 0;
        v = json_object_get_int64(o);
        if (errno != 0 || v < min || v > max)
                return false; /* json-c clamps what does not fit an int64: out of range too */
        *ret = v;
        return true;
}

int irqbalance_bans_parse(const char *text, int *ret_pid, unsigned **ret_irqs, size_t *ret_n) {
        _cleanup_free_ unsigned *irqs = NULL;
        json_tokener *tok;
        json_object *j, *v;
        size_t len = strlen(text), end, n = 0, count;
        int64_t x, pid;
        int r = -EBADMSG;

        assert(text);
        assert(ret_pid);
        assert(ret_irqs);
        assert(ret_n);

        if (len > IRQBALANCE_BANS_RECORD_MAX)
                return -EFBIG;
        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        j = json_tokener_parse_ex(tok, text, (int) len);
        end = j ? json_tokener_get_parse_end(tok) : 0;
        json_tokener_free(tok);
        if (!j)
                return -EBADMSG;
        /* One object and nothing but white space after it. */
        if (text[end + strspn(text + end, " \t\r\n")] != 0 || !json_object_is_type(j, json_type_object))
                goto out;
        if (!json_object_object_get_ex(j, "version", &v) ||
            !json_int_in_range(v, IRQBALANCE_BANS_VERSION, IRQBALANCE_BANS_VERSION, &x))
                goto out;
        if (!json_object_object_get_ex(j, "irqbalance_pid", &v) || !json_int_in_range(v, 1, IRQBALANCE_PID_MAX, &pid))
                goto out;
        if (!json_object_object_get_ex(j, "irqs", &v) || !json_object_is_type(v, json_type_array))
                goto out;
        count = json_object_array_length(v);
        if (count > IRQBALANCE_BANS_MAX)
                goto out;
        irqs = calloc(count ?: 1, sizeof(unsigned));
        if (!irqs) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < count; i++) {
                if (!json_int_in_range(json_object_array_get_idx(v, i), 0, IRQBALANCE_IRQ_MAX, &x))
                        goto out;
                irqs[n++] = (unsigned) x;
        }
        if (n > 1) {
                size_t k = 1;
                qsort(irqs, n, sizeof(unsigned), cmp_unsigned);
                for (size_t i = 1; i < n; i++)
                        if (irqs[i] != irqs[k - 1])
                                irqs[k++] = irqs[i];
                n = k;
        }
        *ret_pid = (int) pid;
        *ret_irqs = TAKE_PTR(irqs);
        *ret_n = n;
        r = 0;
out:
        json_object_put(j);
        return r;
}

int irqbalance_bans_format(int pid, const unsigned *irqs, size_t n, char **ret) {
        _cleanup_free_ unsigned *sorted = NULL;
        json_object *j, *a;
        const char *text;
        char *s = NULL;

        assert(ret);

        if (pid <= 0 || pid > IRQBALANCE_PID_MAX || n > IRQBALANCE_BANS_MAX)
                return -EINVAL;
        sorted = calloc(n ?: 1, sizeof(unsigned));
        if (!sorted)
                return -ENOMEM;
        if (n)
                memcpy(sorted, irqs, n * sizeof(unsigned));
        qsort(sorted, n, sizeof(unsigned), cmp_unsigned);
        for (size_t i = 0; i < n; i++)
                if (sorted[i] > IRQBALANCE_IRQ_MAX)
                        return -EINVAL;

        j = json_object_new_object();
        a = json_object_new_array();
        if (!j || !a) {
                json_object_put(j);
                json_object_put(a);
                return -ENOMEM;
        }
        json_object_object_add(j, "version", json_object_new_int(IRQBALANCE_BANS_VERSION));
        json_object_object_add(j, "irqbalance_pid", json_object_new_int(pid));
        for (size_t i = 0; i < n; i++)
                if (i == 0 || sorted[i] != sorted[i - 1])
                        json_object_array_add(a, json_object_new_int64(sorted[i]));
        json_object_object_add(j, "irqs", a);
        text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_SPACED);
        if (text)
                (void) asprintf_safe(&s, "%s\n", text);
        json_object_put(j);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int irqbalance_bans_load(const char *path, int *ret_pid, unsigned **ret_irqs, size_t *ret_n) {
        _cleanup_free_ char *text = NULL;
        int r = read_regular_file(path, IRQBALANCE_BANS_RECORD_MAX, &text);

        assert(path);
        assert(ret_pid);
        assert(ret_irqs);
        assert(ret_n);

        if (r < 0)
                return r;
        return irqbalance_bans_parse(text, ret_pid, ret_irqs, ret_n);
}

int irqbalance_bans_save(const char *path, int pid, const unsigned *irqs, size_t n) {
        _cleanup_free_ char *text = NULL;
        int r;

        assert(path);

        if (n == 0)
                return unlink(path) < 0 && errno != ENOENT ? negative_errno() : 0;
        r = irqbalance_bans_format(pid, irqs, n, &text);
        if (r < 0)
                return r;
        return write_file_atomic_full(path, text, strlen(text), WRITE_FILE_EXCL_TEMP);
}
