/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <ctype.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>

#include "util.h"

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
        return NULL;
}

size_t strv_length(char * const *l) {
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

int strv_push(char ***l, char *value) {
        size_t n;
        char **c;

        assert(l);
        assert(value);

        n = strv_length(*l);
        c = realloc(*l, sizeof(char *) * (n + 2));
        if (!c) {
                free(value);
                return -ENOMEM;
        }
        c[n] = value;
        c[n + 1] = NULL;
        *l = c;
        return 0;
}

int strv_extend(char ***l, const char *value) {
        char *v;

        assert(l);
        assert(value);

        v = strdup(value);
        if (!v)
                return -ENOMEM;
        return strv_push(l, v);
}

int strv_copy(char * const *l, char ***ret) {
        char **c = NULL;

        assert(ret);

        for (char * const *i = l; i && *i; i++)
                if (strv_extend(&c, *i) < 0) {
                        strv_free(c);
                        return -ENOMEM;
                }
        *ret = c;
        return 0;
}

bool strv_contains(char * const *l, const char *s) {
        assert(s);

        if (l)
                for (char * const *i = l; *i; i++)
                        if (streq(*i, s))
                                return true;
        return false;
}

static int cmp_str(const void *a, const void *b) {
        assert(a);
        assert(b);

        return strcmp(*(char * const *) a, *(char * const *) b);
}

void strv_sort(char **l) {
        size_t n = strv_length(l);
        if (n > 1)
                qsort(l, n, sizeof(char *), cmp_str);
}

char *strstrip(char *s) {
        char *e;

        assert(s);

        while (isspace((unsigned char) *s))
                memmove(s, s + 1, strlen(s));
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = 0;
        return s;
}

char *strdup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

bool copy_string(const char *src, char **dst) {
        assert(dst);

        *dst = strdup_or_null(src);
        return !src || *dst;
}

bool str_startswith(const char *s, const char *prefix) {
        assert(s);
        assert(prefix);

        return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool str_endswith(const char *s, const char *suffix) {
        size_t a, b;

        assert(s);
        assert(suffix);

        a = strlen(s);
        b = strlen(suffix);
        return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

int asprintf_safe(char **ret, const char *fmt, ...) {
        va_list ap;
        char *s;
        int r;

        assert(ret);
        assert(fmt);

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

char *path_join(const char *a, const char *b) {
        char *s;
        size_t la;

        assert(b);

        if (isempty(a))
                return strdup(b);
        la = strlen(a);
        while (la > 1 && a[la - 1] == '/')
                la--;
        while (*b == '/')
                b++;
        if (asprintf(&s, "%.*s/%s", (int) la, a, b) < 0)
                return NULL;
        return s;
}

int safe_atoi64(const char *s, int64_t *ret) {
        char *end;
        long long v;

        assert(ret);

        if (isempty(s) || isspace((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atou64(const char *s, uint64_t *ret) {
        int64_t v;
        int r;

        assert(ret);

        if (!isempty(s) && s[0] == '-')
                return -ERANGE;
        if (!isempty(s) && s[0] == '+')
                return -EINVAL;
        r = safe_atoi64(s, &v);
        if (r < 0) {
                /* Values above INT64_MAX: fall back to the unsigned parser. */
                char *end;
                unsigned long long u;
                if (r != -ERANGE)
                        return r;
                errno = 0;
                u = strtoull(s, &end, 10);
                if (errno == ERANGE || *end)
                        return -ERANGE;
                *ret = u;
                return 0;
        }
        *ret = (uint64_t) v;
        return 0;
}

int safe_atoi(const char *s, int *ret) {
        int64_t v;
        int r;

        assert(ret);

        r = safe_atoi64(s, &v);
        if (r < 0)
                return r;
        if (v < INT32_MIN || v > INT32_MAX)
                return -ERANGE;
        *ret = (int) v;
        return 0;
}

int safe_atou(const char *s, unsigned *ret) {
        uint64_t v;
        int r;

        assert(ret);

        r = safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

int parse_boolean(const char *s) {
        static const char *const yes[] = { "1", "yes", "y", "true", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "off" };

        assert(s);

        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        return -EINVAL;
}

typedef struct UnitFactor {
        const char *suffix;
        uint64_t factor;
} UnitFactor;

static int parse_with_units(const char *s, const UnitFactor *units, size_t n_units, uint64_t *ret) {
        char *end;
        unsigned long long v;

        assert(units);
        assert(ret);

        if (isempty(s) || !isdigit((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        while (*end == ' ')
                end++;
        for (size_t i = 0; i < n_units; i++)
                if (streq(end, units[i].suffix)) {
                        if (units[i].factor && v > UINT64_MAX / units[i].factor)
                                return -ERANGE;
                        *ret = v * units[i].factor;
                        return 0;
                }
        return -EINVAL;
}

int parse_size(const char *s, uint64_t *ret) {
        static const UnitFactor units[] = {
                { "", 1 }, { "B", 1 },
                { "K", 1ULL << 10 }, { "KiB", 1ULL << 10 },
                { "M", 1ULL << 20 }, { "MiB", 1ULL << 20 },
                { "G", 1ULL << 30 }, { "GiB", 1ULL << 30 },
                { "T", 1ULL << 40 }, { "TiB", 1ULL << 40 },
                { "P", 1ULL << 50 }, { "PiB", 1ULL << 50 },
        };

        assert(ret);

        return parse_with_units(s, units, ELEMENTSOF(units), ret);
}

int parse_duration_usec(const char *s, uint64_t *ret) {
        static const UnitFactor units[] = {
                { "us", 1 }, { "ms", 1000 }, { "s", 1000000 }, { "", 1000000 },
                { "min", 60000000ULL }, { "m", 60000000ULL }, { "h", 3600000000ULL },
        };

        assert(ret);

        return parse_with_units(s, units, ELEMENTSOF(units), ret);
}

bool glob_match(const char *pattern, const char *s) {
        assert(pattern);

        return s && fnmatch(pattern, s, 0) == 0;
}

bool string_has_glob(const char *s) {
        assert(s);

        return strpbrk(s, "*?[") != NULL;
}

uint64_t now_usec(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}
