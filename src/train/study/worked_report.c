/* worked_report.c: the section "The seed texts' worked examples, recomputed" (study/worked.h):
 * a row per example with the seed's place, its figure, the computed figure and the verdict,
 * the seed figures found wrong listed first, then what is not recomputed and why. Written at
 * the end of the scaling study's report.md, and alone as worked_examples.md next to it. */
#include "train/study/worked.h"

#include "tensor/common.h"
#include "tensor/real.h"

#include <math.h>
#include <stdlib.h>

/* A markdown table cell: '|' escaped so that a quote cannot split the row. */
static void put_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputc('\\', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
}

/* v with thousands separators when `whole` (v a whole number), else with `digits` decimals. */
static void put_number(FILE *f, double v, bool whole, int digits)
{
    if (!whole) {
        fprintf(f, "%.*f", digits, v);
        return;
    }
    char b[32], out[48];
    int n = snprintf(b, sizeof b, "%.0f", fabs(v)), k = 0;
    if (v < 0) out[k++] = '-';
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0) out[k++] = ',';
        out[k++] = b[i];
    }
    out[k] = 0;
    fputs(out, f);
}

static bool is_whole(double v)
{
    return fabs(v) < 1e15 && v == floor(v);
}

/* Decimals of a rounding unit: 0.01 -> 2, 0.1 -> 1, 1 and above -> 0. */
static int unit_decimals(double unit)
{
    return unit >= 1 ? 0 : (int)ceil(-log10(unit) - 1e-9);
}

static double unit_of(const tt_worked_example *e, int i)
{
    return e->units ? e->units[i] : e->unit;
}

/* The computed figures as the seed would print them: rounded to its unit, or with the
 * sampling tolerance where the seed's figure is approximate. */
static void put_rounded(FILE *f, const tt_worked_example *e, const tt_worked_result *r)
{
    fputc('[', f);
    for (int i = 0; i < e->n; i++) {
        double u = unit_of(e, i);
        if (i) fputs(", ", f);
        if (isnan(e->seed[i]))
            fputs("-", f);
        else if (isnan(u))
            fprintf(f, "%.3g (allowed: %.3g +- %.2g)", r->got[i], e->seed[i], r->tol[i]);
        else
            fprintf(f, "%.*f", unit_decimals(u), round(r->got[i] / u) * u);
    }
    fputc(']', f);
}

/* All whole: as integers (dims, counts, Q K^T); else each with the example's decimals, but
 * for whole numbers from 10 on (N^2 next to a size in KiB). */
static void put_computed(FILE *f, const tt_worked_example *e, const tt_worked_result *r)
{
    bool all_whole = true;
    for (int i = 0; i < e->n; i++)
        all_whole = all_whole && is_whole(r->got[i]);
    for (int i = 0; i < e->n; i++) {
        if (i) fputs(", ", f);
        double v = r->got[i];
        put_number(f, v, all_whole || (is_whole(v) && fabs(v) >= 10), e->digits);
    }
    if (!isnan(r->xcheck)) fprintf(f, " (the fused tt_sdpa: largest difference %.1e)", r->xcheck);
}

/* The accepted difference after the seed's figure: half its rounding unit, per figure where
 * they differ, or 3 standard errors for a sampled figure; nothing when it gives no figure. */
static void put_tolerance(FILE *f, const tt_worked_example *e)
{
    bool given = false;
    for (int i = 0; i < e->n; i++) given = given || !isnan(e->seed[i]);
    if (!given) return;
    if (isnan(e->unit) && !e->units) {
        fputs(" (±3 standard errors)", f);
        return;
    }
    fputs(" (±", f);
    for (int i = 0; i < (e->units ? e->n : 1); i++)
        fprintf(f, "%s%g", i ? "; ±" : "", unit_of(e, i) / 2);
    fputc(')', f);
}

static const char *verdict_word(tt_worked_verdict v)
{
    return v == TT_WORKED_AGREE     ? "agree"
           : v == TT_WORKED_DIFFERS ? "**DIFFERS**"
                                    : "computed only";
}

static void put_verdict(FILE *f, const tt_worked_example *e, const tt_worked_result *r)
{
    fputs(verdict_word(r->verdict), f);
    if (r->verdict == TT_WORKED_DIFFERS) {
        fprintf(f, " (%d of the seed's figures): to the seed's rounding ", r->n_bad);
        put_rounded(f, e, r);
    } else if (r->verdict == TT_WORKED_ONLY) {
        fputs(" (the seed gives no figure)", f);
    }
    if (e->note) {
        fputs(r->verdict == TT_WORKED_DIFFERS ? ". " : "; ", f);
        put_cell(f, e->note);
    }
}

bool tt_worked_write_section(FILE *f, const char *heading, const tt_worked_result *res)
{
    int count[3] = {0};
    for (int i = 0; i < tt_worked_count; i++)
        count[res[i].verdict]++;
    fprintf(f,
            "%s The seed texts' worked examples, recomputed\n\n"
            "The five seed texts the project was created from (`../shared/seeds/`, in Korean) "
            "print small numeric examples. Each is recomputed here with this project's own ops "
            "on the CPU (%s build), through the autograd graph: `tt_matmul`, `tt_scale`, "
            "`tt_add`, `tt_softmax`, `tt_relu`, `tt_dropout`, the fused `tt_sdpa`, the "
            "attention layer and the sinusoidal table. The inputs and the seeds' figures are "
            "transcribed in `src/train/study/worked_table.c`; nothing is read from the seeds "
            "at run time. A figure agrees when the computed value rounds to it at the seed's "
            "printed precision (within half a unit of its last digit); a figure the seed "
            "writes with ~, and a random experiment (Philox seed %d), agrees within 3 "
            "standard errors. Where a seed's figure is wrong the row says so and why; the "
            "computation is never adjusted to fit it.\n\n"
            "**%d examples: %d agree, %d differ, %d computed only** (the seed gives a formula "
            "or asks a question, and no figure).\n\n",
            heading, TT_REAL_NAME, TT_WORKED_SEED, tt_worked_count, count[TT_WORKED_AGREE],
            count[TT_WORKED_DIFFERS], count[TT_WORKED_ONLY]);
    if (count[TT_WORKED_DIFFERS]) fputs("The seed figures that are wrong:\n\n", f);
    for (int i = 0; i < tt_worked_count; i++) {
        const tt_worked_example *e = &tt_worked_examples[i];
        if (res[i].verdict != TT_WORKED_DIFFERS) continue;
        fprintf(f, "- `%s` (%s): %s; recomputed ", e->id, e->file, e->seed_text);
        put_rounded(f, e, &res[i]);
        fprintf(f, ". %s.\n", e->note ? e->note : "");
    }
    fputs("\n| example | seed (file, where) | computation | seed's figure | computed | verdict "
          "|\n| --- | --- | --- | --- | --- | --- |\n",
          f);
    for (int i = 0; i < tt_worked_count; i++) {
        const tt_worked_example *e = &tt_worked_examples[i];
        fprintf(f, "| %s | `%s`, ", e->id, e->file);
        put_cell(f, e->where);
        fputs(" | ", f);
        put_cell(f, e->what);
        fputs(" | ", f);
        put_cell(f, e->seed_text);
        put_tolerance(f, e);
        fputs(" | ", f);
        put_computed(f, e, &res[i]);
        fputs(" | ", f);
        put_verdict(f, e, &res[i]);
        fputs(" |\n", f);
    }
    fputs("\nNot recomputed (nothing this project computes can check them):\n\n", f);
    for (int i = 0; i < tt_worked_n_skipped; i++)
        fprintf(f, "- %s\n", tt_worked_skipped[i]);
    return !ferror(f);
}

int tt_worked_write_file(const char *dir, const tt_worked_result *res, char *err, size_t errlen)
{
    char path[4096];
    tt_atomic_file o;
    if ((size_t)snprintf(path, sizeof path, "%s/worked_examples.md", dir) >= sizeof path)
        return tt_errorf(err, errlen, "%s: the folder's name is too long for worked_examples.md",
                         dir);
    if (tt_atomic_open(&o, path, err, errlen)) return -1;
    bool ok = tt_worked_write_section(o.f, "#", res);
    if (!ok) tt_errorf(err, errlen, "%s: cannot write %s", path, o.tmp);
    return tt_atomic_close(&o, ok, err, errlen);
}

int tt_worked_write_report(FILE *f, const char *dir, char *err, size_t errlen)
{
    tt_worked_result *res = tt_xmalloc((size_t)tt_worked_count * sizeof *res);
    tt_worked_compute_all(res);
    fputc('\n', f);
    tt_worked_write_section(f, "##", res);
    int rc = dir ? tt_worked_write_file(dir, res, err, errlen) : 0;
    free(res);
    return rc;
}
