/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `iotunectl tune --plot DIR`: one SVG per disk, a panel per knob and queue
 * depth, each candidate's latency distribution as a CDF on a log axis, drawn
 * from the histograms measured (no plotting library: SVG is text). */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fileio.h"
#include "measure.h"
#include "util.h"

#define PANEL_W 420
#define PANEL_H 290 /* the plot, its axis, and a legend line per candidate (at most 6) */
#define MARGIN_L 60
#define MARGIN_T 40
#define GAP 30
#define PLOT_W (PANEL_W - MARGIN_L - 20)
#define PLOT_H 130

static const char *const colours[] = {"#222222", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"};

/* XML text: the few characters that need it escaped. */
static void xml_text(FILE *f, const char *s) {
        for (; s && *s; s++)
                switch (*s) {
                case '<':
                        fputs("&lt;", f);
                        break;
                case '>':
                        fputs("&gt;", f);
                        break;
                case '&':
                        fputs("&amp;", f);
                        break;
                case '"':
                        fputs("&quot;", f);
                        break;
                default:
                        if ((unsigned char) *s >= 0x20)
                                fputc(*s, f);
                }
}

static double x_of(double usec, double lo, double hi) {
        return MARGIN_L + PLOT_W * (log10(usec) - lo) / (hi - lo);
}

static void panel(FILE *f, const KnobTrial *kt, unsigned depth, size_t q, double ox, double oy) {
        double lo = INFINITY, hi = -INFINITY;

        /* The x range: 0.5th to 99.9th percentile over every candidate, whole decades. */
        for (size_t c = 0; c < kt->n; c++) {
                const Histogram *h = &kt->candidates[c].depth[q].latency;
                if (!h->count)
                        continue;
                lo = fmin(lo, log10(fmax(hist_percentile(h, 0.5) / 1000.0, 0.1)));
                hi = fmax(hi, log10(fmax(hist_percentile(h, 99.9) / 1000.0, 0.1)));
        }
        if (!isfinite(lo) || !isfinite(hi))
                return;
        lo = floor(lo);
        hi = ceil(hi);
        if (hi <= lo)
                hi = lo + 1;

        fprintf(f, "<g transform=\"translate(%.0f,%.0f)\">\n", ox, oy);
        fprintf(f, "<text x=\"%d\" y=\"20\" font-size=\"14\" font-weight=\"bold\">%s, QD%u</text>\n", MARGIN_L,
                knob_get(kt->knob)->name, depth);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", MARGIN_L,
                MARGIN_T, PLOT_W, PLOT_H);
        for (double dec = lo; dec <= hi + 1e-9; dec++) {
                double x = x_of(pow(10, dec), lo, hi);
                fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, MARGIN_T, x,
                        MARGIN_T + PLOT_H);
                fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%g</text>\n", x,
                        MARGIN_T + PLOT_H + 12, pow(10, dec));
        }
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">completion latency, us (log)</text>\n",
                MARGIN_L + PLOT_W / 2, MARGIN_T + PLOT_H + 25);
        for (int p = 0; p <= 100; p += 25) {
                double y = MARGIN_T + PLOT_H * (1 - p / 100.0);
                fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%d%%</text>\n", MARGIN_L - 4,
                        y + 3, p);
        }

        for (size_t c = 0; c < kt->n; c++) {
                const Candidate *cd = &kt->candidates[c];
                const Histogram *h = &cd->depth[q].latency;
                const char *colour = colours[c % ELEMENTSOF(colours)];
                uint64_t seen = 0;
                bool first = true;

                if (!h->count)
                        continue;
                fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", colour);
                for (unsigned b = 0; b < HIST_BUCKETS; b++) {
                        uint64_t low, high;
                        if (!h->buckets[b])
                                continue;
                        seen += h->buckets[b];
                        hist_bucket_bounds(b, &low, &high);
                        double us = fmax((double) high / 1000.0, pow(10, lo));
                        if (log10(us) > hi)
                                us = pow(10, hi);
                        double y = MARGIN_T + PLOT_H * (1 - (double) seen / (double) h->count);
                        fprintf(f, "%s%.1f,%.1f", first ? "" : " ", x_of(us, lo, hi), y);
                        first = false;
                }
                fprintf(f, "\"/>\n");
                double ly = MARGIN_T + PLOT_H + 42 + 13 * (double) c;
                double lx = MARGIN_L;
                fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"/>",
                        lx, ly - 3, lx + 14, ly - 3, colour);
                fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\">", lx + 18, ly);
                xml_text(f, cd->value);
                fprintf(f, " (%s, p99 %.0f us)</text>\n", candidate_verdict_to_string(cd->verdict),
                        hist_percentile(h, 99) / 1000.0);
        }
        fprintf(f, "</g>\n");
}

int tune_plot_write(const char *dir, const MeasureReport *r, const MeasureOptions *o, char **ret_path) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t size = 0, rows = 0;
        int q;

        assert(dir);
        assert(r);
        assert(o);
        assert(ret_path);

        for (size_t i = 0; i < r->n_trials; i++)
                rows += !r->trials[i].skipped;
        if (rows == 0)
                return 0;
        q = mkdir_p(dir, 0755);
        if (q < 0)
                return q;
        if (asprintf_safe(&path, "%s/%s.svg", dir, r->disk) < 0)
                return -ENOMEM;

        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        double w = MAX((double) o->n_depths * (PANEL_W + GAP) + GAP, 640.0), h = (double) rows * (PANEL_H + GAP) + 60;
        fprintf(f,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                w, h);
        fprintf(f, "<text x=\"%d\" y=\"24\" font-size=\"16\" font-weight=\"bold\">", GAP);
        xml_text(f, r->disk);
        fprintf(f,
                " (iotunectl tune)</text>\n<text x=\"%d\" y=\"42\" font-size=\"12\">%u-byte O_DIRECT random reads, "
                "%u rounds of %.1f s per candidate and depth; latency CDFs</text>\n",
                GAP, o->block_size, r->rounds_done, (double) o->runtime_usec / 1e6);
        size_t row = 0;
        for (size_t i = 0; i < r->n_trials; i++) {
                if (r->trials[i].skipped)
                        continue;
                for (size_t qd = 0; qd < o->n_depths; qd++)
                        panel(f, &r->trials[i], o->depths[qd], qd, GAP + (double) qd * (PANEL_W + GAP),
                              55 + (double) row * (PANEL_H + GAP));
                row++;
        }
        fprintf(f, "</svg>\n");
        if (fflush(f) != 0 || ferror(f))
                return -ENOMEM;
        fclose(TAKE_PTR(f));

        q = write_file_atomic(path, text, strlen(text));
        if (q < 0)
                return q;
        *ret_path = TAKE_PTR(path);
        return 0;
}
