/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "macro.h"

/* A position in a configuration file. Lines and columns are 1-based, as editors
 * and compilers print them. `file` is owned by whoever owns the mark. */
typedef struct Mark {
        char *file;
        unsigned line;
        unsigned column;
} Mark;

void mark_done(Mark *m);
int mark_copy(Mark *dst, const Mark *src);

typedef struct Diagnostic {
        Mark mark;
        char *message;
} Diagnostic;

/* Collects every configuration error, so one run reports all of them: up to
 * DIAG_MAX, then one "too many errors" line (the daemon logs each as a journal
 * entry; a broken 1 MiB file can hold 60000 errors). */
#define DIAG_MAX 1000u
typedef struct Diag {
        Diagnostic *items;
        size_t n;
        size_t n_dropped; /* errors beyond DIAG_MAX, not recorded */
} Diag;

void diag_done(Diag *d);
/* A diagnostic at a mark (NULL mark: file-less). Returns -EINVAL for convenience,
 * -ENOMEM if it could not even record the error. */
int diag_add(Diag *d, const Mark *m, const char *fmt, ...) _printf_(3, 4);
int diag_add_file(Diag *d, const char *file, const char *fmt, ...) _printf_(3, 4);
/* "file:line:column: message", one per line. */
void diag_print(const Diag *d, FILE *f);
