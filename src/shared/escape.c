/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "escape.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one: no
 * overlong forms, no surrogates, nothing above U+10FFFF (RFC 3629). */
static size_t utf8_valid_len(const unsigned char *s) {
        uint32_t cp;
        size_t n;

        assert(s);

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf) {
                n = 2;
                cp = s[0] & 0x1f;
        } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                n = 3;
                cp = s[0] & 0x0f;
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                n = 4;
                cp = s[0] & 0x07;
        } else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        /* C1 controls (U+0080..U+009F) act as escape introducers on some terminals. */
        if (n == 2 && cp < 0xa0)
                return 0;
        return n;
}

/* The escape for one byte that is not shown as is, into out (at least 5 bytes). */
static size_t escape_byte(unsigned char c, char out[static 5]) {
        static const char hex[] = "0123456789abcdef";
        char e = 0;

        assert(out);

        switch (c) {
        case '\a': e = 'a'; break;
        case '\b': e = 'b'; break;
        case '\t': e = 't'; break;
        case '\n': e = 'n'; break;
        case '\v': e = 'v'; break;
        case '\f': e = 'f'; break;
        case '\r': e = 'r'; break;
        case 0x1b: e = 'e'; break;
        case '\\': e = '\\'; break;
        }
        out[0] = '\\';
        if (e) {
                out[1] = e;
                out[2] = 0;
                return 2;
        }
        out[1] = 'x';
        out[2] = hex[c >> 4];
        out[3] = hex[c & 0xf];
        out[4] = 0;
        return 4;
}

/* Calls emit() for each piece of the escaped text; stops when it returns < 0. */
static void escape_walk(const char *s, int (*emit)(const char *piece, size_t n, void *userdata), void *userdata) {
        const unsigned char *p = (const unsigned char *) s;

        while (*p) {
                char buf[5];
                size_t n = utf8_valid_len(p);

                if (n == 1 && (*p < 0x20 || *p == 0x7f || *p == '\\'))
                        n = 0;
                if (n > 0) {
                        if (emit((const char *) p, n, userdata) < 0)
                                return;
                        p += n;
                        continue;
                }
                n = escape_byte(*p, buf);
                if (emit(buf, n, userdata) < 0)
                        return;
                p++;
        }
}

typedef struct Sink {
        char *buf;
        size_t size, len;
        size_t room_for_dots;  /* len at the last piece boundary that still leaves room for "..." */
        bool truncated;
} Sink;

static int sink_emit(const char *piece, size_t n, void *userdata) {
        Sink *k = userdata;

        assert(piece);
        assert(userdata);

        if (k->len + 4 <= k->size)
                k->room_for_dots = k->len;
        if (k->len + n + 1 > k->size) {
                k->truncated = true;
                return -ENOBUFS;
        }
        memcpy(k->buf + k->len, piece, n);
        k->len += n;
        k->buf[k->len] = 0;
        return 0;
}

static int count_emit(const char *piece, size_t n, void *userdata) {
        assert(piece);
        assert(userdata);

        (void) piece;
        *(size_t *) userdata += n;
        return 0;
}

char *str_escape(const char *s) {
        size_t len = 0;
        Sink k;

        if (!s)
                return NULL;
        escape_walk(s, count_emit, &len);
        k = (Sink) { .buf = malloc(len + 1), .size = len + 1 };
        if (!k.buf)
                return NULL;
        k.buf[0] = 0;
        escape_walk(s, sink_emit, &k);
        return k.buf;
}

const char *str_escape_buf(const char *s, char *buf, size_t size) {
        Sink k = { .buf = buf, .size = size };

        assert(buf);

        if (size == 0)
                return buf;
        buf[0] = 0;
        if (!s)
                return buf;
        escape_walk(s, sink_emit, &k);
        if (k.truncated && size >= 4)
                /* Pieces (a character or one escape) are never cut in half. */
                memcpy(buf + k.room_for_dots, "...", 4);
        return buf;
}

const char *esc(const char *s) {
        static _Thread_local char ring[ESCAPE_SLOTS][ESCAPE_SLOT_SIZE];
        static _Thread_local unsigned next;

        if (!s)
                return NULL;
        return str_escape_buf(s, ring[next++ % ESCAPE_SLOTS], ESCAPE_SLOT_SIZE);
}

static int file_emit(const char *piece, size_t n, void *userdata) {
        assert(piece);
        assert(userdata);

        return fwrite(piece, 1, n, userdata) == n ? 0 : -EIO;
}

int fputs_escaped(const char *s, FILE *f) {
        assert(f);

        if (!s)
                return 0;
        escape_walk(s, file_emit, f);
        return ferror(f) ? EOF : 0;
}
