/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include "macro.h"

/* Text that came from files, sysfs, /proc or device names is shown on a terminal
 * only escaped: control characters (C0, DEL) as C escapes (\n, \t, \e, ...) or
 * \xNN, a backslash as \\, and every byte that is not part of valid UTF-8 (or is a
 * C1 control, U+0080..U+009F) as \xNN. Valid printable UTF-8 is kept as is. */

/* A newly allocated escaped copy of s (NULL gives NULL); NULL on OOM. */
char *str_escape(const char *s);

/* The same into a caller's buffer, truncated (never mid-escape) to fit `size`;
 * returns buf. */
const char *str_escape_buf(const char *s, char *buf, size_t size);

/* A short-lived escaped copy for one printf argument: each call returns a string
 * that stays valid until the next ESCAPE_SLOTS calls (a small ring of buffers),
 * so `printf("%s %s", esc(a), esc(b))` needs no frees. "(null)"-safe: NULL gives
 * NULL. Longer texts are truncated at ESCAPE_SLOT_SIZE - 1 bytes with "...". */
#define ESCAPE_SLOTS 16
#define ESCAPE_SLOT_SIZE 1024
const char *esc(const char *s);

/* fputs() of the escaped text. */
int fputs_escaped(const char *s, FILE *f);
