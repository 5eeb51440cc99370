/* study_plots.c: the scaling study's SVG plots (render_plot.c draws them), one quantity per y
 * axis: 1. Var(q.k) against d_k with the claims; 2. the largest weight and the entropy of a
 * row (two panels, each with its uniform row); 3. dL/dscores, dL/dQ and dL/dK (three panels);
 * 4. the trainings over seeds, each variant's mean with its min-max band: the training loss
 * per step, the validation loss and accuracy per epoch, the q, k, v gradient norms per step.
 * d_k axes are powers of two. */
#include "train/study/study.h"

#include "train/report/render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

tt_spread tt_spread_of(const double *v, int n)
{
    tt_spread r = {0, n ? v[0] : 0, n ? v[0] : 0};
    for (int i = 0; i < n; i++) {
        r.mean += v[i] / n;
        r.lo = fmin(r.lo, v[i]), r.hi = fmax(r.hi, v[i]);
    }
    return r;
}

static int plot(const char *dir, const char *file, const char *title, const char *xlabel,
                tt_plot_scale xs, const tt_plot_panel *p, int n, char *err, size_t errlen)
{
    char path[TT_CONFIG_PATH + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    const tt_plot plot = {.title = title, .xlabel = xlabel, .xscale = xs, .panel = p,
                          .n_panels = n};
    return tt_render_plot_svg(path, &plot, err, errlen);
}

/* 1-3: every series against d_k. */
static int parts_1_to_3(const char *dir, const tt_study_results *s, char *err, size_t errlen)
{
    const int n = s->o.n_dk, T = s->o.T;
    double x[TT_STUDY_MAX_DK], y[18][TT_STUDY_MAX_DK];
    for (int i = 0; i < n; i++) {
        const tt_study_var *v = &s->var[i];
        const tt_study_sat *a = &s->sat[i];
        const tt_study_grad *g = &s->gr[i];
        const double col[18] = {v->var_unscaled, v->var_scaled, s->o.dk[i], 1, a->max_w[0],
                                a->max_w[1], 1.0 / T, a->entropy[0], a->entropy[1], log(T),
                                g->dscores_med[0], g->dscores_med[1], g->dscores[0],
                                g->dscores[1], g->dq[0], g->dq[1], g->dkey[0], g->dkey[1]};
        x[i] = s->o.dk[i];
        for (int k = 0; k < 18; k++) y[k][i] = col[k];
    }
    char title[128], uni_w[48], uni_h[48];
#define S(nm, k, ...) {.name = (nm), .n = n, .x = x, .y = y[k], __VA_ARGS__}
    const char *blue = tt_plot_palette[0], *orange = tt_plot_palette[1];
    const tt_plot_series var[4] = { /* the claims first: a measurement that agrees hides them */
        S("d_k: the claim, unscaled", 2, .style = TT_PLOT_DASHED, .colour = "#555555"),
        S("1: the claim, scaled", 3, .style = TT_PLOT_DASHED, .colour = "#999999"),
        S("Var(q.k), unscaled", 0, .colour = blue),
        S("Var(q.k / sqrt(d_k)), scaled", 1, .colour = orange)};
    const tt_plot_panel pv = {"variance of the score", TT_LOG10, var, 4};
    snprintf(title, sizeof title, "1. Variance of q.k against d_k (%d pairs each)", s->o.samples);
    int rc = plot(dir, "variance.svg", title, "d_k", TT_LOG2, &pv, 1, err, errlen);
    snprintf(uni_w, sizeof uni_w, "a uniform row (1/%d)", T);
    snprintf(uni_h, sizeof uni_h, "a uniform row (log %d)", T);
    const tt_plot_series maxw[3] = {
        S("unscaled", 4), S("scaled", 5),
        S(uni_w, 6, .style = TT_PLOT_DASHED, .colour = "#555555")};
    const tt_plot_series ent[3] = {
        S("unscaled", 7), S("scaled", 8),
        S(uni_h, 9, .style = TT_PLOT_DASHED, .colour = "#555555")};
    const tt_plot_panel ps[2] = {{"largest weight of a row", TT_LINEAR, maxw, 3},
                                 {"row entropy (nats)", TT_LINEAR, ent, 3}};
    snprintf(title, sizeof title, "2. Softmax saturation: rows of %d keys, mean over %d rows", T,
             tt_study_rows(&s->o));
    rc = rc || plot(dir, "saturation.svg", title, "d_k", TT_LOG2, ps, 2, err, errlen);
    const tt_plot_series ds[4] = {
        S("median row, unscaled", 10), S("median row, scaled", 11),
        S("RMS over all rows, unscaled", 12, .style = TT_PLOT_DASHED, .colour = blue),
        S("RMS over all rows, scaled", 13, .style = TT_PLOT_DASHED, .colour = orange)};
    const tt_plot_series dq[2] = {S("unscaled", 14), S("scaled", 15)};
    const tt_plot_series dkey[2] = {S("unscaled", 16), S("scaled", 17)};
#undef S
    const tt_plot_panel pg[3] = {{"dL/dscores", TT_LOG10, ds, 4},
                                 {"dL/dQ, RMS", TT_LOG10, dq, 2},
                                 {"dL/dK, RMS", TT_LOG10, dkey, 2}};
    rc = rc || plot(dir, "gradients.svg", "3. Gradients through the attention backward, size "
                    "per element", "d_k", TT_LOG2, pg, 3, err, errlen);
    return rc;
}

/* Part 4 across seeds: the mean and min-max of one per-step or per-epoch column of variant v. */
typedef struct band {
    double *mean, *lo, *hi;
    const double *x;
    int n;
} band;

static band band_of(const tt_study_results *s, int v, bool per_epoch,
                    const double *(*col)(const tt_study_trace *))
{
    const tt_study_trace *t0 = &s->t[v];
    band b = {.x = per_epoch ? t0->epoch : t0->step, .n = per_epoch ? t0->n_epochs : t0->n_steps};
    for (int k = 0; k < s->n_seeds; k++) {
        const tt_study_trace *t = &s->t[2 * k + v];
        b.n = per_epoch ? (t->n_epochs < b.n ? t->n_epochs : b.n)
                        : (t->n_steps < b.n ? t->n_steps : b.n);
    }
    b.mean = tt_xmalloc((size_t)(b.n + 1) * sizeof(double));
    b.lo = tt_xmalloc((size_t)(b.n + 1) * sizeof(double));
    b.hi = tt_xmalloc((size_t)(b.n + 1) * sizeof(double));
    double *v_at = tt_xmalloc((size_t)s->n_seeds * sizeof(double));
    for (int i = 0; i < b.n; i++) {
        for (int k = 0; k < s->n_seeds; k++) v_at[k] = col(&s->t[2 * k + v])[i];
        tt_spread r = tt_spread_of(v_at, s->n_seeds);
        b.mean[i] = r.mean, b.lo[i] = r.lo, b.hi[i] = r.hi;
    }
    free(v_at);
    return b;
}

static void band_free(band *b)
{
    free(b->mean);
    free(b->lo);
    free(b->hi);
}

static const double *col_loss(const tt_study_trace *t) { return t->loss; }
static const double *col_q(const tt_study_trace *t) { return t->grad[TT_STUDY_Q]; }
static const double *col_k(const tt_study_trace *t) { return t->grad[TT_STUDY_K]; }
static const double *col_v(const tt_study_trace *t) { return t->grad[TT_STUDY_V]; }
static const double *col_valid_loss(const tt_study_trace *t) { return t->valid_loss; }
static const double *col_valid_acc(const tt_study_trace *t) { return t->valid_acc; }

/* One panel per column: both variants' means with their bands. */
static int part_4_plot(const char *dir, const char *file, const char *title,
                       const tt_study_results *s, bool per_epoch, int n_cols,
                       const double *(*const *cols)(const tt_study_trace *),
                       const char *const *ylabels, const tt_plot_scale *ys, char *err,
                       size_t errlen)
{
    band b[3][2];
    tt_plot_series sr[3][2];
    tt_plot_panel p[3];
    char names[2][96];
    for (int v = 0; v < 2; v++)
        snprintf(names[v], sizeof names[v], "attn_scale %s: mean of %d seeds, band min-max",
                 v ? "none" : "sqrt_dk", s->n_seeds);
    for (int c = 0; c < n_cols; c++) {
        for (int v = 0; v < 2; v++) {
            b[c][v] = band_of(s, v, per_epoch, cols[c]);
            sr[c][v] = (tt_plot_series){.name = names[v], .n = b[c][v].n, .x = b[c][v].x,
                                        .y = b[c][v].mean, .lo = b[c][v].lo, .hi = b[c][v].hi,
                                        .style = per_epoch ? TT_PLOT_LINE_MARKERS : TT_PLOT_LINE};
        }
        p[c] = (tt_plot_panel){ylabels[c], ys[c], sr[c], 2};
    }
    int rc = plot(dir, file, title, per_epoch ? "epoch (0: before training)" : "optimizer step",
                  TT_LINEAR, p, n_cols, err, errlen);
    for (int c = 0; c < n_cols; c++)
        for (int v = 0; v < 2; v++) band_free(&b[c][v]);
    return rc;
}

int tt_study_write_plots(const tt_config *c, const tt_study_results *s, char *err,
                         size_t errlen)
{
    const char *dir = c->output.dir;
    char title[160];
    const int dk = c->study.d_model / c->study.n_heads;
    int rc = parts_1_to_3(dir, s, err, errlen);
    const double *(*const loss[1])(const tt_study_trace *) = {col_loss};
    const char *const l_lab[1] = {"training loss (cross-entropy)"};
    const tt_plot_scale l_sc[1] = {TT_LOG10};
    snprintf(title, sizeof title, "4. Training loss of each step, d_k = %d", dk);
    rc = rc || part_4_plot(dir, "training_loss.svg", title, s, false, 1, loss, l_lab, l_sc, err,
                           errlen);
    const double *(*const valid[2])(const tt_study_trace *) = {col_valid_loss, col_valid_acc};
    const char *const v_lab[2] = {"validation loss", "validation accuracy"};
    const tt_plot_scale v_sc[2] = {TT_LOG10, TT_LINEAR};
    snprintf(title, sizeof title, "4. Validation loss and accuracy after each epoch, d_k = %d",
             dk);
    rc = rc || part_4_plot(dir, "training_valid.svg", title, s, true, 2, valid, v_lab, v_sc, err,
                           errlen);
    const double *(*const grad[3])(const tt_study_trace *) = {col_q, col_k, col_v};
    const char *const g_lab[3] = {"q: gradient norm", "k: gradient norm", "v: gradient norm"};
    const tt_plot_scale g_sc[3] = {TT_LOG10, TT_LOG10, TT_LOG10};
    snprintf(title, sizeof title, "4. Gradient norms of the q, k, v projections (all layers), "
             "d_k = %d", dk);
    rc = rc || part_4_plot(dir, "training_attn_grad.svg", title, s, false, 3, grad, g_lab, g_sc,
                           err, errlen);
    return rc ? -1 : 0;
}
