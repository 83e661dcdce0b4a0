/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Sets of IRQ numbers as the irqbalance ban policy keeps them: an array and its
 * length, in no particular order, without duplicates when built with
 * irqset_add(). Small (the vectors of a machine's disks), so linear is fine. */

bool irqset_contains(const unsigned *a, size_t n, unsigned v);
/* Add v unless it is there already. 0, or -ENOMEM (the set unchanged). */
int irqset_add(unsigned **a, size_t *n, unsigned v);
/* The same members, in any order (both without duplicates). */
bool irqset_equal(const unsigned *a, size_t na, const unsigned *b, size_t nb);
/* A copy of the first n members; *ret NULL when n is 0. -ENOMEM. */
int irqset_copy(const unsigned *a, size_t n, unsigned **ret);
void irqset_sort(unsigned *a, size_t n);
/* "40 41 57", sorted; "" for none; NULL on OOM. */
char *irqset_format(const unsigned *a, size_t n);
