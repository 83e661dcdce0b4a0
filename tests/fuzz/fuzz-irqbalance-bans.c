/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* irqbalance_bans_parse() and irqbalance_bans_load(): the record of the bans
 * iotuned sent, read back as untrusted input. What parses must be in range,
 * sorted without duplicates, and survive irqbalance_bans_format(). */
#include "fuzz-util.h"
#include "irqbalance.h"

static void check(int pid, const unsigned *irqs, size_t n) {
        unsigned *irqs2 = NULL;
        size_t n2 = 0;
        int pid2 = 0;
        char *text = NULL;

        if (pid < 1 || pid > IRQBALANCE_PID_MAX || n > IRQBALANCE_BANS_MAX)
                abort();
        for (size_t i = 0; i < n; i++)
                if (irqs[i] > IRQBALANCE_IRQ_MAX || (i > 0 && irqs[i - 1] >= irqs[i]))
                        abort();
        if (irqbalance_bans_format(pid, irqs, n, &text) < 0)
                abort();
        if (irqbalance_bans_parse(text, &pid2, &irqs2, &n2) < 0 || pid2 != pid || n2 != n ||
            (n && memcmp(irqs, irqs2, n * sizeof(unsigned)) != 0))
                abort();
        free(irqs2);
        free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *path;
        unsigned *irqs = NULL;
        size_t n = 0;
        int pid = 0;
        char *text;

        if (size > IRQBALANCE_BANS_RECORD_MAX + 16)
                return 0;
        text = fuzz_strndup(data, size);
        if (irqbalance_bans_parse(text, &pid, &irqs, &n) == 0) {
                check(pid, irqs, n);
                free(irqs);
                irqs = NULL;
        }
        free(text);

        /* The same bytes as the file the daemon reads (size limit, trailing
         * newlines and NULs stripped, embedded NULs). */
        if (!path)
                path = fuzz_path(IRQBALANCE_BANS_RECORD);
        fuzz_write_file(path, data, size);
        if (irqbalance_bans_load(path, &pid, &irqs, &n) == 0) {
                check(pid, irqs, n);
                free(irqs);
        }
        return 0;
}
