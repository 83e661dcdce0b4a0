/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpuset_parse(): sysfs cpulists (both styles) and the `cpus:` of a profile.
 * Whatever it accepts must survive a round trip through cpuset_format(), and
 * the set operations must agree with each other on it. */
#include "cpuset.h"
#include "fuzz-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        CpuSet a = {}, b = {}, u = {};
        char *text, *canon = NULL, *canon2 = NULL;

        if (size > 4096) /* a cpulist is short; longer inputs only slow the search */
                return 0;
        text = fuzz_strndup(data, size);
        if (cpuset_parse(text, &a) == 0) {
                if (cpuset_format(&a, &canon) < 0)
                        abort();
                /* The canonical form parses back to the same set, and formats the same. */
                if (cpuset_parse(canon, &b) != 0 || !cpuset_equal(&a, &b))
                        abort();
                if (cpuset_format(&b, &canon2) < 0 || strcmp(canon, canon2) != 0)
                        abort();
                if (cpuset_count(&a) != cpuset_count(&b) || cpuset_span(&a) != cpuset_span(&b))
                        abort();
                if ((cpuset_count(&a) > 0) != cpuset_intersects(&a, &b))
                        abort();
                if (cpuset_span(&a) > 0 && !cpuset_contains(&a, cpuset_span(&a) - 1))
                        abort();
                if (cpuset_copy(&u, &a) < 0 || cpuset_or(&u, &b) < 0 || !cpuset_equal(&u, &a))
                        abort();
        } else if (a.bits || a.n_words)
                abort(); /* "nothing written to ret" on failure */
        cpuset_done(&a);
        cpuset_done(&b);
        cpuset_done(&u);
        free(canon);
        free(canon2);
        free(text);
        return 0;
}
