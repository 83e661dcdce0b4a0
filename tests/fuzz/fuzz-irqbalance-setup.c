/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* irqbalance_parse_setup(): irqbalance's reply to "setup" over its socket (a
 * process of another package: untrusted). */
#include "fuzz-util.h"
#include "irqbalance.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        unsigned *irqs = NULL;
        size_t n = 0;
        char *reply;

        if (size > 8192) /* request() reads at most 8191 bytes of a reply */
                return 0;
        reply = fuzz_strndup(data, size);
        if (irqbalance_parse_setup(reply, &irqs, &n) == 0)
                for (size_t i = 1; i < n; i++)
                        if (irqs[i - 1] > irqs[i])
                                abort(); /* documented as sorted */
        free(irqs);
        free(reply);
        return 0;
}
