/* test_study.c: the scaling study's measurements (src/train/study/measure.c) against the claims they
 * test, with the seed fixed: Var(q.k) = d_k unscaled and 1 scaled (within 5%, every d_k up to
 * 1024); softmax saturating without the scale and not with it; the gradient of the scores
 * vanishing without it; temperature sharpening and flattening; the CSV files parsing back;
 * each d_k's numbers independent of the other widths measured. Then a small whole study over
 * two seeds: the gradient norms' CSV against each training's own metrics, the report's spread
 * against the per-seed runs' files, and a folder with nothing empty in it. A study too large
 * for the memory exits 2 before it writes anything. */
#include "testutil.h"

#include "train/cli.h"
#include "train/study/study.h"
#include "train_testutil.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { SEED = 20240611 };

START_TEST(test_variance_is_dk)
{
    tt_study_opts o = tt_study_defaults(SEED);
    ck_assert_int_eq(o.samples, 10000);
    tt_study_var v[TT_STUDY_MAX_DK];
    tt_study_variance(&o, v);
    for (int i = 0; i < o.n_dk; i++) {
        double dk = o.dk[i];
        ck_assert_int_eq(v[i].dk, o.dk[i]);
        ck_assert_msg(fabs(v[i].var_unscaled / dk - 1) < 0.05,
                      "d_k %d: Var(q.k) = %g, want %g within 5%%", o.dk[i], v[i].var_unscaled, dk);
        ck_assert_msg(fabs(v[i].var_scaled - 1) < 0.05,
                      "d_k %d: Var(q.k / sqrt(d_k)) = %g, want 1 within 5%%", o.dk[i],
                      v[i].var_scaled);
        /* the mean is 0 with standard error sqrt(d_k / samples): 5 of those is generous */
        ck_assert_msg(fabs(v[i].mean_unscaled) < 5 * sqrt(dk / o.samples),
                      "d_k %d: mean(q.k) = %g, want 0", o.dk[i], v[i].mean_unscaled);
    }
}
END_TEST

/* A width's numbers come from its own stream: measuring d_k = 64 alone gives the same row. */
START_TEST(test_dk_streams_independent)
{
    tt_study_opts all = tt_study_defaults(SEED), one = all;
    all.samples = one.samples = 2000;
    one.n_dk = 1;
    one.dk[0] = 64;
    tt_study_var va[TT_STUDY_MAX_DK], vo[1];
    tt_study_variance(&all, va);
    tt_study_variance(&one, vo);
    ck_assert_int_eq(va[2].dk, 64);
    ck_assert_msg(va[2].var_unscaled == vo[0].var_unscaled && va[2].var_scaled == vo[0].var_scaled,
                  "d_k 64 alone: var %g / %g, among all widths: %g / %g", vo[0].var_unscaled,
                  vo[0].var_scaled, va[2].var_unscaled, va[2].var_scaled);
    /* and another seed gives other numbers */
    one.seed = SEED + 1;
    tt_study_variance(&one, vo);
    ck_assert_msg(va[2].var_unscaled != vo[0].var_unscaled, "the seed changes nothing");
}
END_TEST

static double ratio_max_min(const double *x, int n)
{
    double lo = x[0], hi = x[0];
    for (int i = 1; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    return hi / lo;
}

START_TEST(test_softmax_saturates_unscaled)
{
    tt_study_opts o = tt_study_defaults(SEED);
    tt_study_sat s[TT_STUDY_MAX_DK];
    tt_study_saturation(&o, s);
    const double uniform_h = log(o.T);
    for (int i = 0; i < o.n_dk; i++) {
        ck_assert_int_eq(s[i].dk, o.dk[i]);
        for (int v = 0; v < 2; v++) {
            ck_assert_msg(s[i].max_w[v] > 1.0 / o.T && s[i].max_w[v] <= 1 + 1e-9,
                          "d_k %d variant %d: mean max weight %g outside (1/T, 1]", o.dk[i], v,
                          s[i].max_w[v]);
            ck_assert_msg(s[i].entropy[v] >= 0 && s[i].entropy[v] < uniform_h,
                          "d_k %d variant %d: entropy %g outside [0, log T)", o.dk[i], v,
                          s[i].entropy[v]);
        }
        if (i == 0) continue;
        ck_assert_msg(s[i].max_w[0] > s[i - 1].max_w[0],
                      "unscaled max weight does not grow: d_k %d %g, d_k %d %g", o.dk[i - 1],
                      s[i - 1].max_w[0], o.dk[i], s[i].max_w[0]);
        ck_assert_msg(s[i].entropy[0] < s[i - 1].entropy[0],
                      "unscaled entropy does not fall: d_k %d %g, d_k %d %g", o.dk[i - 1],
                      s[i - 1].entropy[0], o.dk[i], s[i].entropy[0]);
    }
    int last = o.n_dk - 1;
    ck_assert_msg(s[last].max_w[0] > 0.9 && s[last].entropy[0] < 0.2,
                  "d_k %d unscaled is not saturated: max weight %g, entropy %g", o.dk[last],
                  s[last].max_w[0], s[last].entropy[0]);
    /* scaled, the score distribution is the same at every width: nearly constant */
    double w1[TT_STUDY_MAX_DK] = {0}, h1[TT_STUDY_MAX_DK] = {0};
    for (int i = 0; i < o.n_dk; i++) {
        w1[i] = s[i].max_w[1];
        h1[i] = s[i].entropy[1];
    }
    double rw = ratio_max_min(w1, o.n_dk), rh = ratio_max_min(h1, o.n_dk);
    ck_assert_msg(rw < 1.25 && rh < 1.25,
                  "scaled softmax varies with d_k: max weight ratio %g, entropy ratio %g", rw, rh);
    ck_assert_msg(s[last].entropy[1] > 0.75 * uniform_h,
                  "scaled softmax at d_k %d far from uniform-ish: entropy %g of %g", o.dk[last],
                  s[last].entropy[1], uniform_h);
}
END_TEST

START_TEST(test_gradients_vanish_unscaled)
{
    tt_study_opts o = tt_study_defaults(SEED);
    tt_study_grad gr[TT_STUDY_MAX_DK];
    tt_study_gradients(&o, gr);
    int last = o.n_dk - 1;
    double rms1[TT_STUDY_MAX_DK] = {0}, med1[TT_STUDY_MAX_DK] = {0};
    for (int i = 0; i < o.n_dk; i++) {
        ck_assert_int_eq(gr[i].dk, o.dk[i]);
        for (int v = 0; v < 2; v++) {
            const double all[4] = {gr[i].dscores[v], gr[i].dq[v], gr[i].dkey[v],
                                   gr[i].dscores_med[v]};
            for (int j = 0; j < 4; j++)
                ck_assert_msg(isfinite(all[j]) && all[j] > 0,
                              "d_k %d variant %d: statistic %d is %g", o.dk[i], v, j, all[j]);
        }
        rms1[i] = gr[i].dscores[1];
        med1[i] = gr[i].dscores_med[1];
    }
    /* the typical row: exponential vanishing without the scale */
    ck_assert_msg(gr[last].dscores_med[0] < 1e-3 * gr[0].dscores_med[0],
                  "unscaled median dscores: d_k %d %g, d_k %d %g: not vanishing", o.dk[0],
                  gr[0].dscores_med[0], o.dk[last], gr[last].dscores_med[0]);
    /* the RMS, carried by near-tied rows, falls as ~d_k^-1/4: from 4 to 1024, 1/4 */
    ck_assert_msg(gr[last].dscores[0] < 0.6 * gr[0].dscores[0],
                  "unscaled RMS dscores: d_k %d %g, d_k %d %g: not falling", o.dk[0],
                  gr[0].dscores[0], o.dk[last], gr[last].dscores[0]);
    for (int i = 2; i < o.n_dk; i++)
        ck_assert_msg(gr[i].dscores[0] < gr[i - 1].dscores[0],
                      "unscaled RMS dscores grows from d_k %d (%g) to %d (%g)", o.dk[i - 1],
                      gr[i - 1].dscores[0], o.dk[i], gr[i].dscores[0]);
    double r_rms = ratio_max_min(rms1, o.n_dk), r_med = ratio_max_min(med1, o.n_dk);
    ck_assert_msg(r_rms < 3 && r_med < 3,
                  "scaled dscores vary with d_k: RMS max/min %g, median max/min %g", r_rms, r_med);
    ck_assert_msg(gr[last].dscores[1] > 1.5 * gr[last].dscores[0],
                  "d_k %d: scaled RMS dscores %g not above unscaled %g", o.dk[last],
                  gr[last].dscores[1], gr[last].dscores[0]);
}
END_TEST

START_TEST(test_temperature)
{
    const double scores[3] = {2, 1, 0.5}, taus[3] = {1, 0.5, 2};
    double w[9];
    tt_study_temperature(scores, 3, taus, 3, w);
    double z = exp(2.0) + exp(1.0) + exp(0.5);
    const double want[3] = {exp(2.0) / z, exp(1.0) / z, exp(0.5) / z};
    for (int j = 0; j < 3; j++)
        ck_assert_msg(fabs(w[j] - want[j]) < 1e-6, "tau 1: weight %d = %.9g, closed form %.9g",
                      j, w[j], want[j]);
    for (int i = 0; i < 3; i++) {
        double sum = w[3 * i] + w[3 * i + 1] + w[3 * i + 2];
        ck_assert_msg(fabs(sum - 1) < 1e-6, "tau %g: weights sum to %.9g", taus[i], sum);
        ck_assert_msg(w[3 * i] > w[3 * i + 1] && w[3 * i + 1] > w[3 * i + 2],
                      "tau %g: order of the scores lost", taus[i]);
    }
    ck_assert_msg(w[3] > w[0] + 0.05, "tau 0.5 not sharper: max %g vs %g at tau 1", w[3], w[0]);
    ck_assert_msg(w[6] < w[0] - 0.05, "tau 2 not flatter: max %g vs %g at tau 1", w[6], w[0]);
    ck_assert_msg(w[8] > w[2] && w[2] > w[5], "smallest weight not rising with tau: %g %g %g",
                  w[5], w[2], w[8]);
}
END_TEST

/* Reads path back: returns the number of lines; every line must have `cols` fields, the first
 * the header; the cells of rows 1.. go into cells (row-major). */
static int read_csv(const char *path, int cols, const char *header, double *cells, int max_rows)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s: not written", path);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        ck_assert_msg(strchr(line, '\n') != NULL, "%s:%d: unterminated or too long", path, n + 1);
        line[strcspn(line, "\n")] = '\0';
        int fields = 1;
        for (const char *p = line; *p; p++) fields += *p == ',';
        ck_assert_msg(fields == cols, "%s:%d: %d fields, want %d", path, n + 1, fields, cols);
        if (n == 0) {
            ck_assert_msg(strcmp(line, header) == 0, "%s: header '%s'", path, line);
        } else {
            ck_assert_msg(n <= max_rows, "%s: more than %d rows", path, max_rows);
            char *p = line;
            for (int c = 0; c < cols; c++) {
                char *end;
                cells[(n - 1) * cols + c] = strtod(p, &end);
                ck_assert_msg(end != p, "%s:%d: field %d not a number", path, n + 1, c + 1);
                p = *end == ',' ? end + 1 : end;
            }
        }
        n++;
    }
    fclose(f);
    return n;
}

static void assert_near6(const char *what, double got, double want)
{
    ck_assert_msg(fabs(got - want) <= 1e-5 * fabs(want) + 1e-300, "%s: read %.9g, wrote %.9g",
                  what, got, want);
}

START_TEST(test_csv_round_trip)
{
    tt_study_opts o = tt_study_defaults(SEED);
    o.n_dk = 2;
    o.dk[0] = 4;
    o.dk[1] = 32;
    o.samples = 400;
    o.T = 4;
    tt_study_var v[2];
    tt_study_sat s[2];
    tt_study_grad gr[2];
    tt_study_variance(&o, v);
    tt_study_saturation(&o, s);
    tt_study_gradients(&o, gr);
    char err[256];
    const char *dir = tt_test_tmpdir();
    const char *path[3] = {tt_test_path("var.csv"), tt_test_path("sat.csv"),
                           tt_test_path("grad.csv")};
    ck_assert_int_eq(tt_study_write_csv_var(path[0], v, 2, err, sizeof err), 0);
    ck_assert_int_eq(tt_study_write_csv_sat(path[1], s, 2, err, sizeof err), 0);
    ck_assert_int_eq(tt_study_write_csv_grad(path[2], gr, 2, err, sizeof err), 0);

    double c[2 * 9];
    ck_assert_int_eq(read_csv(path[0], 4, "dk,var_unscaled,var_scaled,mean_unscaled", c, 2), 3);
    for (int i = 0; i < 2; i++) {
        assert_near6("var dk", c[i * 4], v[i].dk);
        assert_near6("var_unscaled", c[i * 4 + 1], v[i].var_unscaled);
        assert_near6("var_scaled", c[i * 4 + 2], v[i].var_scaled);
        assert_near6("mean_unscaled", c[i * 4 + 3], v[i].mean_unscaled);
    }
    ck_assert_int_eq(read_csv(path[1], 5,
                              "dk,max_w_unscaled,max_w_scaled,entropy_unscaled,entropy_scaled", c,
                              2),
                     3);
    for (int i = 0; i < 2; i++) {
        assert_near6("sat dk", c[i * 5], s[i].dk);
        assert_near6("max_w_scaled", c[i * 5 + 2], s[i].max_w[1]);
        assert_near6("entropy_unscaled", c[i * 5 + 3], s[i].entropy[0]);
    }
    ck_assert_int_eq(read_csv(path[2], 9,
                              "dk,dscores_unscaled,dscores_scaled,dq_unscaled,dq_scaled,"
                              "dkey_unscaled,dkey_scaled,dscores_med_unscaled,dscores_med_scaled",
                              c, 2),
                     3);
    for (int i = 0; i < 2; i++) {
        assert_near6("grad dk", c[i * 9], gr[i].dk);
        assert_near6("dscores_unscaled", c[i * 9 + 1], gr[i].dscores[0]);
        assert_near6("dkey_scaled", c[i * 9 + 6], gr[i].dkey[1]);
        assert_near6("dscores_med_scaled", c[i * 9 + 8], gr[i].dscores_med[1]);
    }
    /* the three files and nothing else: the atomic writes left no temporary file behind */
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int files = 0;
    for (struct dirent *de; (de = readdir(d));)
        files += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    ck_assert_int_eq(files, 3);

    /* a directory that does not exist: -1, and the message names the path */
    char bad[4200];
    snprintf(bad, sizeof bad, "%s/missing/var.csv", dir);
    ck_assert_int_eq(tt_study_write_csv_var(bad, v, 2, err, sizeof err), -1);
    ck_assert_msg(strstr(err, bad) != NULL, "error does not name the path: %s", err);
}
END_TEST

/* ---- a whole study, small: 2 seeds, d_model 32, 1 epoch ---- */

static int run_study(const char *out)
{
    char set_out[600];
    snprintf(set_out, sizeof set_out, "output.dir=%s", out);
    char *argv[] = {"train", "configs/scaling.json", "--set", set_out, "--set",
                    "study.samples=1000", "--set", "study.epochs=1", "--set", "study.d_model=32",
                    "--set", "study.n_heads=2", "--set", "study.seeds=2", NULL};
    fflush(stdout);
    int saved = dup(1), devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    int rc = tt_train_main((int)(sizeof argv / sizeof argv[0]) - 1, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved), close(devnull);
    return rc;
}

/* A run's metrics.jsonl: the loss of every step line (n of them, at most max) and the last
 * evaluation line's valid_loss. */
static int step_losses(const char *path, double *loss, double *grad_norm, int max,
                       double *valid_loss)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s missing", path);
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        cJSON *o = cJSON_Parse(line);
        ck_assert_ptr_nonnull(o);
        const cJSON *v = cJSON_GetObjectItem(o, "valid_loss");
        if (v) {
            *valid_loss = v->valuedouble;
        } else {
            ck_assert_int_lt(n, max);
            loss[n] = cJSON_GetObjectItem(o, "loss")->valuedouble;
            grad_norm[n++] = cJSON_GetObjectItem(o, "grad_norm")->valuedouble;
        }
        cJSON_Delete(o);
    }
    fclose(f);
    return n;
}

/* Nothing empty anywhere under dir: every folder has an entry, every file a byte. */
static void assert_nothing_empty(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "%s: cannot open", dir);
    int entries = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        entries++;
        char path[1024];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        ck_assert_int_eq(stat(path, &st), 0);
        if (S_ISDIR(st.st_mode))
            assert_nothing_empty(path);
        else
            ck_assert_msg(st.st_size > 0, "%s is empty", path);
    }
    closedir(d);
    ck_assert_msg(entries > 0, "%s is an empty folder", dir);
}

/* The report's per-epoch row of the last epoch: the valid-loss cells "mean (lo-hi)" of sqrt_dk
 * and none. */
static void report_last_epoch(const char *report, double cell[2][3])
{
    char *text = NULL, *row = NULL;
    size_t len = 0;
    FILE *f = fopen(report, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert(getdelim(&text, &len, '\0', f) > 0);
    fclose(f);
    const char *table = strstr(text, "| epoch | valid loss, sqrt_dk | valid loss, none |");
    ck_assert_msg(table, "no per-epoch table of part 4");
    row = strstr(table, "\n| 1 | ");
    ck_assert_msg(row, "no row for epoch 1");
    ck_assert_int_eq(sscanf(row, "\n| 1 | %lf (%lf-%lf) | %lf (%lf-%lf) |", &cell[0][0],
                            &cell[0][1], &cell[0][2], &cell[1][0], &cell[1][1], &cell[1][2]),
                     6);
    free(text);
}

START_TEST(test_study_over_seeds)
{
    const char *out = tt_test_path("s");
    ck_assert_int_eq(run_study(out), 0);
    char path[4][600];
    const char *runs[2][2] = {{"train_sqrt_dk", "train_none"},
                              {"train_sqrt_dk_seed2", "train_none_seed2"}};
    /* each training's steps and losses, from its own metrics.jsonl */
    enum { MAX = 512 };
    double loss[2][2][MAX], norm[2][2][MAX], valid[2][2];
    int steps[2][2];
    for (int k = 0; k < 2; k++)
        for (int v = 0; v < 2; v++) {
            snprintf(path[0], sizeof path[0], "%s/%s/metrics.jsonl", out, runs[k][v]);
            steps[k][v] = step_losses(path[0], loss[k][v], norm[k][v], MAX, &valid[k][v]);
            ck_assert_int_gt(steps[k][v], 10);
            ck_assert_int_eq(steps[k][v], steps[0][0]);
        }
    /* attn_grad_norms.csv: the header, then steps x 2 variants x 2 seeds rows in that order,
     * each loss that step's, and q, k, v parts of the global gradient norm (before clipping) */
    snprintf(path[1], sizeof path[1], "%s/attn_grad_norms.csv", out);
    FILE *f = fopen(path[1], "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "seed,variant,step,loss,grad_q,grad_k,grad_v\n");
    int rows = 0;
    for (int k = 0; k < 2; k++)
        for (int v = 0; v < 2; v++)
            for (int i = 0; i < steps[k][v]; i++, rows++) {
                ck_assert_msg(fgets(line, sizeof line, f), "%s: only %d rows", path[1], rows);
                long long seed;
                char variant[16];
                double step, l, g[3];
                ck_assert_int_eq(sscanf(line, "%lld,%15[^,],%lf,%lf,%lf,%lf,%lf", &seed, variant,
                                        &step, &l, &g[0], &g[1], &g[2]),
                                 7);
                ck_assert_int_eq(seed, 1 + k);
                ck_assert_str_eq(variant, v ? "none" : "sqrt_dk");
                ck_assert_int_eq((int)step, i + 1);
                ck_assert_msg(fabs(l - loss[k][v][i]) <= 1e-5 * fabs(loss[k][v][i]),
                              "row %d: loss %g, the run's %g", rows, l, loss[k][v][i]);
                double qkv = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
                ck_assert_msg(g[0] > 0 && g[1] > 0 && g[2] > 0 && qkv <= norm[k][v][i] * 1.0001,
                              "row %d: q, k, v %g %g %g against the whole norm %g", rows, g[0],
                              g[1], g[2], norm[k][v][i]);
            }
    ck_assert_ptr_null(fgets(line, sizeof line, f));
    fclose(f);
    /* the report's spread of the final validation loss: mean, min and max of the two seeds */
    double cell[2][3];
    snprintf(path[2], sizeof path[2], "%s/report.md", out);
    report_last_epoch(path[2], cell);
    for (int v = 0; v < 2; v++) {
        const double a = valid[0][v], b = valid[1][v];
        const double want[3] = {(a + b) / 2, fmin(a, b), fmax(a, b)};
        for (int j = 0; j < 3; j++)
            ck_assert_msg(fabs(cell[v][j] - want[j]) <= 6e-5, "variant %d, %s: report %g, runs %g",
                          v, j ? j == 1 ? "min" : "max" : "mean", cell[v][j], want[j]);
    }
    ck_assert_msg(valid[0][0] != valid[1][0], "the two seeds trained alike");
    /* the first seed keeps its maps, the others none; temperature pictures titled by tau */
    snprintf(path[3], sizeof path[3], "%s/train_sqrt_dk/attention/index.html", out);
    ck_assert_int_eq(access(path[3], R_OK), 0);
    snprintf(path[3], sizeof path[3], "%s/train_none_seed2/attention", out);
    ck_assert_int_ne(access(path[3], F_OK), 0);
    snprintf(path[3], sizeof path[3], "%s/temperature_0.5.svg", out);
    f = fopen(path[3], "r");
    ck_assert_ptr_nonnull(f);
    char head[4096];
    size_t got = fread(head, 1, sizeof head - 1, f);
    head[got] = '\0';
    fclose(f);
    ck_assert_msg(strstr(head, "temperature tau = 0.5"), "no tau in the title");
    assert_nothing_empty(out);
}
END_TEST

/* study.samples or study.d_model too large for the memory (a fake MemAvailable of 8 GB; the
 * config's own model fits): exit 2 at start-up naming the study's keys, the output folder not
 * made. The first two are the sizes that aborted after the CSV files were written. */
START_TEST(test_study_too_large_exit_2)
{
    static const char *const sets[] = {"study.samples=2000000000", "study.d_model=1048576",
                                       "study.samples=20000000", "study.d_model=16384"};
    static const char *const want[][2] = {{"study measurements ", "study.samples 2000000000"},
                                          {"parameters ", "study.d_model 1048576"},
                                          {"study measurements ", "study.samples 20000000,"},
                                          {"optimizer moments ", "study.d_model 16384"}};
    mkdir(tt_test_path("root"), 0755);
    mkdir(tt_test_path("root/proc"), 0755);
    tt_test_put("root/proc/meminfo", "MemTotal: 9000000 kB\nMemAvailable: 8000000 kB\n");
    setenv("TT_MEM_ROOT", tt_test_path("root"), 1);
    const char *out = tt_test_path("s");
    char set_out[600], msg[4096];
    snprintf(set_out, sizeof set_out, "output.dir=%s", out);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        int rc = tt_test_train(msg, sizeof msg, "configs/scaling.json", "--set", set_out,
                               "--set", sets[i], NULL);
        ck_assert_msg(rc == 2, "%s: exit %d: %s", sets[i], rc, msg);
        const char *parts[] = {"memory: this run needs ", want[i][0], want[i][1],
                               "may use 8.2 GB", "HINT: lower study.samples"};
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++)
            ck_assert_msg(strstr(msg, parts[k]), "%s: '%s' not in: %s", sets[i], parts[k], msg);
        ck_assert_msg(access(out, F_OK) != 0, "%s: %s was made", sets[i], out);
    }
    unsetenv("TT_MEM_ROOT");
}
END_TEST

Suite *study_suite(void)
{
    Suite *s = suite_create("study");
    TCase *tc = tcase_create("scaling");
    tcase_set_timeout(tc, 120); /* each test runs a part at full size: seconds under ASan */
    tcase_add_checked_fixture(tc, tt_tmp_setup, tt_tmp_teardown);
    tcase_add_test(tc, test_variance_is_dk);
    tcase_add_test(tc, test_dk_streams_independent);
    tcase_add_test(tc, test_softmax_saturates_unscaled);
    tcase_add_test(tc, test_gradients_vanish_unscaled);
    tcase_add_test(tc, test_temperature);
    tcase_add_test(tc, test_csv_round_trip);
    tcase_add_test(tc, test_study_over_seeds);
    tcase_add_test(tc, test_study_too_large_exit_2);
    suite_add_tcase(s, tc);
    return s;
}
