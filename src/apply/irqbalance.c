/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glob.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "irqbalance.h"
#include "util.h"

/* irqbalance reads a command with one recv of up to this many bytes (and 1.9.3+
 * copies the IRQ list into a 256-byte buffer): longer ban lists are cut there. */
#define IRQBALANCE_CMD_MAX 1024
#define IRQBALANCE_TIMEOUT_MS 2000

void irqbalance_done(IrqBalance *b) {
        free(b->socket_path);
        *b = (IrqBalance) {};
}

int irqbalance_find(const char *root, IrqBalance *ret) {
        _cleanup_free_ char *pattern = NULL;
        glob_t g = {};
        int r = -ENOENT;

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

static int request(const IrqBalance *b, const char *cmd, char **ret_reply) {
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

        if (strlen(b->socket_path) >= sizeof(sa.sun_path) || strlen(cmd) >= IRQBALANCE_CMD_MAX)
                return -E2BIG;
        strcpy(sa.sun_path, b->socket_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return negative_errno();

        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_CREDENTIALS;
        cm->cmsg_len = CMSG_LEN(sizeof(cred));
        memcpy(CMSG_DATA(cm), &cred, sizeof(cred));
        if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
                return negative_errno();

        if (ret_reply) {
                char buf[8192];
                size_t len = 0;
                for (;;) {
                        struct pollfd p = { .fd = fd, .events = POLLIN };
                        ssize_t n;
                        int q = poll(&p, 1, IRQBALANCE_TIMEOUT_MS);
                        if (q < 0 && errno == EINTR)
                                continue;
                        if (q <= 0)
                                return q == 0 ? -ETIMEDOUT : negative_errno();
                        n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return negative_errno();
                        if (n == 0 || (len += n) >= sizeof(buf) - 1)
                                break;
                }
                buf[len] = 0;
                *ret_reply = strdup(buf);
                if (!*ret_reply)
                        return -ENOMEM;
        }
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

int irqbalance_get_banned(const IrqBalance *b, unsigned **ret, size_t *ret_n) {
        _cleanup_free_ char *reply = NULL;
        int r = request(b, "setup", &reply);
        if (r < 0)
                return r;
        return irqbalance_parse_setup(reply, ret, ret_n);
}

int irqbalance_set_banned(const IrqBalance *b, const unsigned *irqs, size_t n) {
        char cmd[IRQBALANCE_CMD_MAX];
        size_t off = snprintf(cmd, sizeof(cmd), "settings ban irqs");

        if (n == 0)
                snprintf(cmd + off, sizeof(cmd) - off, " NONE");
        for (size_t i = 0; i < n; i++) {
                off += snprintf(cmd + off, sizeof(cmd) - off, " %u", irqs[i]);
                if (off >= sizeof(cmd))
                        return -E2BIG;
        }
        return request(b, cmd, NULL);
}
