/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "macro.h"

/* NULL-terminated string vectors; a NULL vector is an empty one. */
char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)
size_t strv_length(char * const *l);
int strv_push(char ***l, char *value);          /* takes ownership, even on failure */
int strv_extend(char ***l, const char *value);  /* copies */
/* A copy of `l` (NULL for NULL); -ENOMEM. */
int strv_copy(char * const *l, char ***ret);
bool strv_contains(char * const *l, const char *s);
void strv_sort(char **l);

char *strstrip(char *s);                        /* in place, returns s */
char *strdup_or_null(const char *s);
/* *dst = strdup_or_null(src); false when out of memory (src was not NULL). */
bool copy_string(const char *src, char **dst);
/* Not startswith(): libnvme 1.3 exports a function of that name (returning char *), and
 * ours would interpose it inside libnvme.so. */
bool str_startswith(const char *s, const char *prefix);
bool str_endswith(const char *s, const char *suffix);
int asprintf_safe(char **ret, const char *fmt, ...) _printf_(2, 3);
char *path_join(const char *a, const char *b);   /* "a/b", tolerates slashes; a NULL or "" a gives b; NULL on OOM */

/* Strict integer parsing: whole string, base 10, range checked. -EINVAL / -ERANGE
 * (a NULL or empty s is -EINVAL). */
int safe_atoi64(const char *s, int64_t *ret);
int safe_atou64(const char *s, uint64_t *ret);
int safe_atoi(const char *s, int *ret);
int safe_atou(const char *s, unsigned *ret);

/* "true/false/yes/no/on/off/1/0" -> 1 / 0, else -EINVAL */
int parse_boolean(const char *s);
/* "64M", "2T", "512" (bytes); binary units. A NULL or empty s is -EINVAL, as for
 * parse_duration_usec(). */
int parse_size(const char *s, uint64_t *ret);
/* "5s", "250ms", "1min", "2h" -> microseconds */
int parse_duration_usec(const char *s, uint64_t *ret);

bool glob_match(const char *pattern, const char *s); /* a NULL s matches nothing */
bool string_has_glob(const char *s);

/* clock_gettime(clock) in microseconds. */
uint64_t now_usec(clockid_t clock);
