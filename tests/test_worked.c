/* test_worked.c: the seed texts' worked examples (study/worked.h). Every computed figure is
 * pinned to a value derived independently, by hand or with Python's math module (the
 * one-liner sits next to each literal), never copied from the program's output; the verdicts
 * (which seed figures are wrong, and how many of each row's) come from the same derivations;
 * the agree/differs rule is tested on made-up figures; and the report section has its header,
 * its counts, and one row per example. */
#include "testutil.h"

#include "train/study/worked.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* float32 and float64 builds: 1e-5 / 1e-12 where the derivation is exact */
#ifdef TT_DOUBLE
#define WTOL 1e-12
#else
#define WTOL 1e-5
#endif

/* Computes the example and compares its n figures with want[] within tol. */
static tt_worked_result check(const char *id, const double *want, int n, double tol)
{
    const tt_worked_example *e = tt_worked_find(id);
    ck_assert_msg(e != NULL, "no worked example %s", id);
    ck_assert_int_eq(e->n, n);
    tt_worked_result r;
    tt_worked_compute(e, &r);
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabs(r.got[i] - want[i]) <= tol, "%s figure %d: computed %.17g, want %.17g",
                      id, i, r.got[i], want[i]);
    return r;
}

#define CHECK(id, tol, ...)                                                                        \
    check(id, (const double[]){__VA_ARGS__}, (int)(sizeof((double[]){__VA_ARGS__}) /              \
                                                   sizeof(double)), tol)

/* Python: sm = lambda x: [math.exp(v - max(x)) / sum(math.exp(u - max(x)) for u in x)
 *                         for v in x] */
START_TEST(test_softmax_examples)
{
    CHECK("000-scale", WTOL, 4, 0.125, 0.25); /* 32/8, 1/8, 2/8 */
    /* sm([32, 1, 2]) */
    CHECK("000-unscaled", WTOL, 0.9999999999998721, 3.442477108469536e-14, 9.357622968838978e-14);
    /* sm([4, 0.125, 0.25]) */
    CHECK("000-scaled", WTOL, 0.9576048384137711, 0.01987445436592905, 0.022520707220299734);
    /* sm([0.3, 0.2, 0.4, 0.5]) */
    CHECK("000-row", WTOL, 0.23632778232153764, 0.21383822036598443, 0.2611825921550756,
          0.28865140515740234);
    /* [2, 1, 0.5] / tau, then sm([4, 2, 1]), sm([2, 1, 0.5]), sm([1, 0.5, 0.25]) */
    CHECK("000-tau-0.5", WTOL, 4, 2, 1, 0.8437947344813395, 0.11419519938459449,
          0.04201006613406605);
    CHECK("000-tau-1", WTOL, 2, 1, 0.5, 0.6285317192117624, 0.23122389762214907,
          0.14024438316608848);
    CHECK("000-tau-2", WTOL, 1, 0.5, 0.25, 0.48102426325336967, 0.29175596372884977,
          0.2272197730177806);
    CHECK("000-uniform", WTOL, 0.25, 0.25, 0.25, 0.25); /* 1/4 each */
    /* sm([20, -20, 0]), sm([2, -2, 0]) */
    CHECK("001-saturated", WTOL, 0.9999999979388463, 4.248354246535078e-18, 2.0611536181902033e-09);
    CHECK("001-gentle", WTOL, 0.8668133321973347, 0.015876239976466762, 0.11731042782619835);
    /* by hand: every map row printed sums to 1.00 (e.g. 0.08 + 0.42 + 0.30 + 0.20) */
    CHECK("000-maps", WTOL, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
}
END_TEST

/* 001's Q, K, V by hand (Q K^T as the seed's own step 1), weights and output in Python:
 * W = [sm([s / 2 for s in row]) for row in S]; O[i][c] = sum(W[i][j] * V[j][c] for j) */
START_TEST(test_qkv_example)
{
    CHECK("001-qk", WTOL, 1, 1, 2, 1, 1, 0, 2, 0, 1);
    CHECK("001-scaled", WTOL, 0.5, 0.5, 1, 0.5, 0.5, 0, 1, 0, 0.5);
    const char *rows[3] = {"001-w1", "001-w2", "001-w3"};
    const double w[3][3] = {{0.274068619061197, 0.274068619061197, 0.45186276187760605},
                            {0.38365173119055074, 0.38365173119055074, 0.23269653761889864},
                            {0.506480391055654, 0.1863237232258476, 0.3071958857184984}};
    for (int i = 0; i < 3; i++) {
        tt_worked_result r = check(rows[i], w[i], 3, WTOL);
        ck_assert_msg(r.xcheck <= WTOL, "%s: fused and composed differ by %g", rows[i], r.xcheck);
    }
    tt_worked_result r = CHECK("001-out", WTOL, 0.725931380938803, 0.725931380938803,
                               0.274068619061197, 0.274068619061197, 0.6163482688094494,
                               0.6163482688094494, 0.38365173119055074, 0.38365173119055074,
                               0.8136762767741523, 0.493519608944346, 0.1863237232258476,
                               0.506480391055654);
    ck_assert_msg(r.xcheck <= WTOL, "001-out: fused and composed differ by %g", r.xcheck);
}
END_TEST

/* Python: math.sqrt(d) for d in (64, 128, 512); sizes by hand */
START_TEST(test_arithmetic_examples)
{
    CHECK("001-std", WTOL, 8, 11.313708498984761, 22.627416997969522);
    CHECK("001-vla-scale", WTOL, 11.313708498984761, 8);
    CHECK("001-q2", WTOL, 16);
    CHECK("003-sqrt", WTOL, 8);
    CHECK("000-heads", 0, 64, 1);                      /* 768 / 12; 12 * 64 / 768 */
    CHECK("000-cost-100", 0, 10000, 39.0625);          /* 100**2, 100**2 * 4 / 1024 */
    CHECK("000-cost-196", 0, 38416, 150.0625);         /* 196**2 * 4 / 1024 */
    CHECK("000-cost-1024", 0, 1048576, 4);             /* 1024**2 * 4 / 1024**2 */
    CHECK("000-cost-16384", 0, 268435456, 1);          /* 16384**2 * 4 / 1024**3 */
    CHECK("001-q3", 0, 1000000, 16000000, 16);         /* 1000**2, 4000**2, 4**2 */
    CHECK("001-pairs", 0, 309136);                     /* (256 + 300)**2 */
    CHECK("001-wq", 0, 3, 128);                        /* [3, 4096] x [4096, 128] */
}
END_TEST

/* By hand: the dims each step of attention gives for the inputs' dims. */
START_TEST(test_shape_examples)
{
    CHECK("002-shapes", 0, 2, 3, 3, 2, 3, 3, 2, 3, 3, 2, 3, 3, 2, 3, 5);
    CHECK("004-heads", 0, 2, 3, 4, 5, 5); /* d_k = 15 / 3 */
    CHECK("004-cross", WTOL, 2, 3, 2, 5, 1, 1);
    CHECK("000-shape-1head", 0, 2, 5, 64);
    CHECK("000-shape-mha", 0, 196, 32, 196, 768); /* 14 * 14 */
}
END_TEST

START_TEST(test_mask_and_table_examples)
{
    /* sm([1, 2]) with the third key masked: exactly 0, both ways */
    tt_worked_result r = CHECK("002-pad", WTOL, 0.2689414213699951, 0.7310585786300049, 0,
                               0.2689414213699951, 0.7310585786300049, 0);
    ck_assert(r.got[2] == 0 && r.got[5] == 0);
    /* 4 tokens: the 4 * 3 / 2 = 6 keys after their query are masked, none on or before */
    CHECK("002-causal", 0, 6, 0, 0);
    CHECK("003-causal", 0, 6, 0, 0);
    /* relu: min 0, relu(20) = 20; math.tanh(20) == 1.0 in double, and so in float */
    CHECK("003-ranges", WTOL, 0, 20, 1, -1);
    /* [f(pos / 10000 ** (2 * (c // 2) / 4)) for c, f in zip(range(4), (sin, cos, sin, cos))]
     * for pos 0, 1, 2; the table holds float32 in that build, hence 1e-7 there */
    CHECK("003-posenc", WTOL > 1e-7 ? 1e-7 : WTOL, 0, 1, 0, 1, 0.8414709848078965,
          0.5403023058681398, 0.009999833334166664, 0.9999500004166653, 0.9092974268256817,
          -0.4161468365471424, 0.01999866669333308, 0.9998000066665778);
}
END_TEST

/* Random experiments: the tolerances are 3 standard errors, derived in Python, and the
 * figures lie within them of the claims. */
START_TEST(test_sampled_examples)
{
    struct {
        const char *id;
        double tol[4]; /* 3*sqrt(dk/S), 3*dk*sqrt(2/(S-1) + 6/dk/S), those over sqrt(dk), dk */
    } v[2] = {{"000-variance", {0.758946638440411, 8.789641733415635, 0.09486832980505137,
                                0.1373381520846193}},
              {"002-variance", {0.48, 10.925154354047635, 0.03, 0.04267638419549857}}};
    for (int k = 0; k < 2; k++) {
        const tt_worked_example *e = tt_worked_find(v[k].id);
        tt_worked_result r;
        tt_worked_compute(e, &r);
        for (int i = 0; i < 4; i++) {
            ck_assert_msg(fabs(r.tol[i] - v[k].tol[i]) <= 1e-12 * v[k].tol[i] + 1e-15,
                          "%s tolerance %d: %.17g, want %.17g", v[k].id, i, r.tol[i],
                          v[k].tol[i]);
            ck_assert_msg(fabs(r.got[i] - e->seed[i]) <= v[k].tol[i], "%s figure %d: %g", v[k].id,
                          i, r.got[i]);
        }
        ck_assert_int_eq(r.verdict, TT_WORKED_AGREE);
    }
    const tt_worked_example *e = tt_worked_find("000-dropout");
    tt_worked_result r;
    tt_worked_compute(e, &r);
    /* 3*math.sqrt(0.1*0.9/100000); 1/0.9 (the kept weights' scale) */
    ck_assert(fabs(r.tol[0] - 0.0028460498941515417) <= 1e-15);
    ck_assert_msg(fabs(r.got[0] - 0.1) <= r.tol[0], "dropped fraction %g", r.got[0]);
    ck_assert_msg(fabs(r.got[1] - 1.1111111111111112) <= WTOL, "kept scale %.17g", r.got[1]);
}
END_TEST

/* The verdicts, from the derivations above: which rows differ and by how many figures. */
START_TEST(test_verdicts)
{
    /* |seed - computed| > 0.005: 0.95/0.9576 and 0.03/0.0225; all 4 of 000-row; 3 of each
     * tau 1 and 2 row; 0.26/0.2741 twice and 0.48/0.4519; 0.39/0.3837 twice and 0.22/0.2327;
     * only 0.30/0.3072 in row 3; 0.71/0.8668, 0.01/0.0159, 0.10/0.1173 */
    static const struct {
        const char *id;
        int n_bad;
    } differs[] = {{"000-scaled", 2}, {"000-row", 4}, {"000-tau-1", 3}, {"000-tau-2", 3},
                   {"001-w1", 3},     {"001-w2", 3},  {"001-w3", 1},    {"001-gentle", 3}};
    static const char *const only[] = {"001-out", "001-q2", "001-q3", "003-posenc"};
    ck_assert_int_eq(tt_worked_count, 42);
    for (int i = 0; i < tt_worked_count; i++) {
        const tt_worked_example *e = &tt_worked_examples[i];
        if (!strcmp(e->id, "000-shape-mha")) continue; /* its figures: test_shape_examples */
        tt_worked_result r;
        tt_worked_compute(e, &r);
        tt_worked_verdict want = TT_WORKED_AGREE;
        int bad = 0;
        for (size_t k = 0; k < sizeof differs / sizeof differs[0]; k++)
            if (!strcmp(e->id, differs[k].id)) want = TT_WORKED_DIFFERS, bad = differs[k].n_bad;
        for (size_t k = 0; k < sizeof only / sizeof only[0]; k++)
            if (!strcmp(e->id, only[k])) want = TT_WORKED_ONLY;
        ck_assert_msg(r.verdict == want && r.n_bad == bad, "%s: verdict %d (%d bad), want %d (%d)",
                      e->id, r.verdict, r.n_bad, want, bad);
        ck_assert_msg(want != TT_WORKED_DIFFERS || e->note, "%s differs and says not why", e->id);
    }
}
END_TEST

/* The rule on made-up figures, and a made-up example whose seed figure is wrong. */
START_TEST(test_agree_rule)
{
    ck_assert(!tt_worked_figure_agrees(0.95, 0.9576, 0.005)); /* rounds to 0.96 */
    ck_assert(tt_worked_figure_agrees(0.96, 0.9576, 0.005));
    ck_assert(tt_worked_figure_agrees(0.02, 0.025, 0.005)); /* a tie rounds either way */
    ck_assert(!tt_worked_figure_agrees(0.02, 0.0251, 0.005));
    ck_assert(tt_worked_figure_agrees(268e6, 268435456, 0.5e6)); /* "268M" */

    /* softmax([0, 0]) is [0.5, 0.5]: a seed printing [0.6, 0.4] is wrong twice, and a row
     * without seed figures is computed only */
    tt_worked_example e = {.id = "made-up", .file = "x", .where = "x", .what = "x",
                           .seed_text = "x", .kind = TT_WK_SOFTMAX,
                           .in = (const double[]){0, 0}, .n_in = 2, .n = 2, .seed = {0.6, 0.4},
                           .unit = 0.01, .digits = 2};
    tt_worked_result r;
    tt_worked_compute(&e, &r);
    ck_assert(r.verdict == TT_WORKED_DIFFERS && r.n_bad == 2);
    ck_assert(fabs(r.got[0] - 0.5) <= WTOL && fabs(r.tol[0] - 0.005) <= 1e-15);
    e.seed[0] = 0.5;
    tt_worked_judge(&e, &r);
    ck_assert(r.verdict == TT_WORKED_DIFFERS && r.n_bad == 1);
    e.seed[1] = 0.50;
    tt_worked_judge(&e, &r);
    ck_assert(r.verdict == TT_WORKED_AGREE && r.n_bad == 0);
    e.seed[0] = e.seed[1] = NAN;
    tt_worked_judge(&e, &r);
    ck_assert(r.verdict == TT_WORKED_ONLY);
}
END_TEST

/* The table itself: ids unique, every row placed in one of the five seeds. */
START_TEST(test_table_entries)
{
    static const char *const files[] = {"000_49fd20e01785f00a.txt", "001_d799740502060d11.txt",
                                        "002_ca46430d25cdbe6d.txt", "003_f816199ab5036d9d.txt",
                                        "004_3507279b3c6e822b.txt"};
    for (int i = 0; i < tt_worked_count; i++) {
        const tt_worked_example *e = &tt_worked_examples[i];
        bool known = false;
        for (int k = 0; k < 5; k++) known = known || !strcmp(e->file, files[k]);
        ck_assert_msg(known && strncmp(e->id, e->file, 3) == 0, "%s: file %s", e->id, e->file);
        ck_assert_msg(strstr(e->where, "l. ") && *e->what && *e->seed_text, "%s: place", e->id);
        ck_assert(tt_worked_find(e->id) == e); /* the first with its id is itself */
    }
    ck_assert(tt_worked_find("nope") == NULL);
}
END_TEST

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    ck_assert(fread(s, 1, (size_t)n, f) == (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

/* Cells of a table row: its unescaped '|' less one. */
static int cells(const char *line, const char *end)
{
    int bars = 0;
    for (const char *p = line; p < end; p++) bars += *p == '|' && (p == line || p[-1] != '\\');
    return bars - 1;
}

static void check_section(const char *text, const char *heading)
{
    char want[128];
    snprintf(want, sizeof want, "%s The seed texts' worked examples, recomputed\n", heading);
    ck_assert_msg(strstr(text, want) != NULL, "no header %s", want);
    /* 42 examples, 8 differ and 4 computed only (test_verdicts): 30 agree */
    ck_assert(strstr(text, "**42 examples: 30 agree, 8 differ, 4 computed only**"));
    for (int i = 0; i < tt_worked_count; i++) {
        char row[64];
        snprintf(row, sizeof row, "\n| %s | `", tt_worked_examples[i].id);
        const char *at = strstr(text, row);
        ck_assert_msg(at != NULL, "no row for %s", tt_worked_examples[i].id);
        ck_assert_msg(!strstr(at + 1, row), "two rows for %s", tt_worked_examples[i].id);
        const char *end = strchr(at + 1, '\n');
        ck_assert_msg(cells(at + 1, end) == 6, "%s: %d cells", tt_worked_examples[i].id,
                      cells(at + 1, end));
    }
    int wrong = 0;
    for (const char *p = text; (p = strstr(p, "\n- `")); p++) wrong++;
    ck_assert_int_eq(wrong, 8);
    ck_assert(strstr(text, "| 000-scaled | ") && strstr(text, "**DIFFERS** (2 of the seed's"));
    ck_assert(strstr(text, "to the seed's rounding [0.96, 0.02, 0.02]"));
}

START_TEST(test_report_section)
{
    const char *path = tt_test_path("report.md");
    FILE *f = fopen(path, "w");
    char err[512] = "";
    ck_assert_msg(tt_worked_write_report(f, tt_test_tmpdir(), err, sizeof err) == 0, "%s", err);
    fclose(f);
    char *text = slurp(path);
    check_section(text, "##");
    free(text);
    text = slurp(tt_test_path("worked_examples.md"));
    ck_assert(strncmp(text, "# The seed texts'", 17) == 0);
    check_section(text, "#");
    free(text);
    /* a folder that is not there: -1, and err names the file */
    tt_worked_result *res = calloc((size_t)tt_worked_count, sizeof *res);
    ck_assert(tt_worked_write_file(tt_test_path("missing"), res, err, sizeof err) == -1);
    free(res);
    ck_assert_msg(strstr(err, "missing/worked_examples.md") != NULL, "%s", err);
}
END_TEST

Suite *worked_suite(void)
{
    Suite *s = suite_create("worked");
    TCase *tc = tcase_create("figures");
    tcase_set_timeout(tc, 300); /* 000-shape-mha: a [32, 196, 768] attention layer, ~30 GFLOP */
    tcase_add_test(tc, test_softmax_examples);
    tcase_add_test(tc, test_qkv_example);
    tcase_add_test(tc, test_arithmetic_examples);
    tcase_add_test(tc, test_shape_examples);
    tcase_add_test(tc, test_mask_and_table_examples);
    tcase_add_test(tc, test_sampled_examples);
    tcase_add_test(tc, test_verdicts);
    tcase_add_test(tc, test_agree_rule);
    tcase_add_test(tc, test_table_entries);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("report");
    tcase_add_checked_fixture(tr, tt_tmp_setup, tt_tmp_teardown);
    tcase_set_timeout(tr, 300);
    tcase_add_test(tr, test_report_section);
    suite_add_tcase(s, tr);
    return s;
}
