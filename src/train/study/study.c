/* study.c: the scaling study (study.kind "scaling"), a client of the run API: measurements
 * 1-3 and 5a (measure.c), then two trainings of a wide-head model on the config's data with
 * attn_scale "sqrt_dk" and "none" (4), and the trained scaled model's maps at three
 * temperatures (5b); the report and plots are written by report/study_report.c. */
#include "train/study/study.h"

#include "train/report/render.h"
#include "train/run/probes.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Norm of the gradients of every in_proj (the q, k, v projections): what saturation starves. */
static void record_step(tt_run *r, double loss, double grad_norm, void *ctx)
{
    tt_study_trace *t = ctx;
    (void)grad_norm;
    double s = 0;
    for (int i = 0; i < r->model.params.n; i++) {
        const tt_param *p = r->model.params.items[i];
        if (strstr(p->name, "self_attn.in_proj"))
            s += r->g.be->sum_squares(p->var.grad.data, p->var.val.n);
    }
    TT_ASSERT_MSG(t->n_steps < t->cap, "study: more steps than the run's %d", t->cap);
    t->step[t->n_steps] = (double)r->step;
    t->loss[t->n_steps] = loss;
    t->attn_grad[t->n_steps++] = sqrt(s);
}

/* The evaluation lines of a run's metrics.jsonl into the trace. */
static void read_evals(tt_study_trace *t, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[8192];
    while (f && fgets(line, sizeof line, f) && t->n_epochs <= TT_STUDY_MAX_EPOCHS) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *acc = cJSON_GetObjectItem(o, "valid_acc");
        const cJSON *ent = cJSON_GetObjectItem(o, "attention_entropy");
        if (cJSON_IsNumber(acc)) {
            int i = t->n_epochs++;
            t->epoch[i] = cJSON_GetObjectItem(o, "epoch")->valuedouble;
            t->valid_acc[i] = acc->valuedouble;
            t->valid_loss[i] = cJSON_GetObjectItem(o, "valid_loss")->valuedouble;
            double sum = 0;
            int n = 0;
            for (const cJSON *l = ent ? ent->child : NULL; l; l = l->next)
                for (const cJSON *h = l->child; h; h = h->next) sum += h->valuedouble, n++;
            t->entropy[i] = n ? sum / n : 0;
        }
        cJSON_Delete(o);
    }
    if (f) fclose(f);
}

/* Mean max weight and mean row entropy over every probe row, layer and head. */
static void map_stats(const tt_attn_epoch *e, double *max_w, double *entropy)
{
    double m = 0, h = 0;
    int64_t rows = 0;
    for (int p = 0; p < e->n_probes; p++) {
        const tt_attn_probe *pr = &e->probes[p];
        for (int k = 0; k < e->L * e->H * pr->T; k++) {
            const real *row = pr->w + (size_t)k * pr->T;
            double best = 0;
            for (int j = 0; j < pr->T; j++) best = fmax(best, (double)row[j]);
            m += best;
            h += tt_attn_row_entropy(row, pr->T);
            rows++;
        }
    }
    *max_w = rows ? m / (double)rows : 0;
    *entropy = rows ? h / (double)rows : 0;
}

/* Part 4 (one training) and, on the scaled model, part 5b. */
static int train_one(tt_run *parent, bool scaled, tt_study_trace *t, tt_study_temp *temps, int n_temps,
                     char *err, size_t errlen)
{
    tt_run s = {0};
    s.cfg = parent->cfg; /* shallow: the string arrays stay the parent's (detached below) */
    s.cfg.study.kind = TT_STUDY_NONE;
    s.cfg.model.d_model = parent->cfg.study.d_model;
    s.cfg.model.n_heads = parent->cfg.study.n_heads;
    s.cfg.model.attn_scale_none = !scaled;
    s.cfg.train.epochs = parent->cfg.study.epochs;
    s.cfg.output.checkpoint_every = 0;
    t->name = scaled ? "sqrt_dk" : "none";
    char out[2 * TT_CONFIG_PATH];
    snprintf(out, sizeof out, "%s/train_%s", parent->cfg.output.dir, t->name);
    if (strlen(out) >= sizeof s.cfg.output.dir) {
        tt_errorf(err, errlen, "%s: output.dir is too long", out);
        return -1;
    }
    memcpy(s.cfg.output.dir, out, strlen(out) + 1);
    int rc = tt_corpus_load(&s.data, &s.cfg, err, errlen) ? -1 : 0;
    if (!rc) rc = tt_run_init(&s, err, errlen) ? -1 : 0;
    if (!rc) rc = tt_run_prepare_dir(&s, false, err, errlen) ? -1 : 0;
    if (!rc) {
        printf("\n== part 4: training with attn_scale \"%s\" (d_model %d, %d heads, d_k %d)\n",
               t->name, s.cfg.model.d_model, s.cfg.model.n_heads,
               s.cfg.model.d_model / s.cfg.model.n_heads);
        t->cap = (int)s.total_steps; /* allocated here, not inside the training loop */
        t->step = tt_xmalloc((size_t)t->cap * sizeof(double));
        t->loss = tt_xmalloc((size_t)t->cap * sizeof(double));
        t->attn_grad = tt_xmalloc((size_t)t->cap * sizeof(double));
        s.on_step = record_step;
        s.on_step_ctx = t;
        rc = tt_run_train(&s, err, errlen);
    }
    if (!rc) {
        fclose(s.metrics);
        s.metrics = NULL;
        char path[TT_CONFIG_PATH + 64];
        snprintf(path, sizeof path, "%s/metrics.jsonl", s.cfg.output.dir);
        read_evals(t, path);
    }
    for (int i = 0; !rc && i < n_temps; i++) { /* 5b: the same weights, scores / tau */
        tt_attn_epoch e;
        tt_model_set_temperature(&s.model, (real)temps[i].tau);
        tt_probe_maps(&s, &e);
        map_stats(&e, &temps[i].max_w, &temps[i].entropy);
        char path[TT_CONFIG_PATH + 64];
        snprintf(path, sizeof path, "%s/temperature_%g.svg", parent->cfg.output.dir,
                 temps[i].tau);
        rc = tt_render_heatmap_svg(&e, path, err, errlen) ? -1 : 0;
        tt_attn_epoch_free(&e);
        temps[i].valid_acc = tt_run_evaluate(&s).acc;
        tt_model_set_temperature(&s.model, (real)s.cfg.model.attn_temperature);
    }
    s.cfg.data.probes = NULL, s.cfg.data.n_probes = 0; /* the parent's */
    s.cfg.data.ambiguous = NULL, s.cfg.data.n_ambiguous = 0;
    tt_run_free(&s);
    return rc;
}

static void trace_free(tt_study_trace *t)
{
    free(t->step);
    free(t->loss);
    free(t->attn_grad);
}


/* Parts 1-3 and 5a measured, their CSV files written, then the two trainings (4, 5b), then
 * the report and plots. */
int tt_study_main(tt_run *r, char *err, size_t errlen)
{
    const tt_config *c = &r->cfg;
    const char *dir = c->output.dir;
    tt_study_results *s = tt_xcalloc(1, sizeof *s);
    s->o = tt_study_defaults((uint64_t)c->seed);
    s->o.samples = c->study.samples;
    s->o.device = c->device;
    const int n = s->o.n_dk;
    printf("scaling study: parts 1-3 with %d samples per d_k, into %s\n", s->o.samples, dir);
    tt_study_variance(&s->o, s->var);
    tt_study_saturation(&s->o, s->sat);
    tt_study_gradients(&s->o, s->gr);
    char path[TT_CONFIG_PATH + 64];
    int rc = 0;
    snprintf(path, sizeof path, "%s/variance.csv", dir);
    rc = rc || tt_study_write_csv_var(path, s->var, n, err, errlen);
    snprintf(path, sizeof path, "%s/saturation.csv", dir);
    rc = rc || tt_study_write_csv_sat(path, s->sat, n, err, errlen);
    snprintf(path, sizeof path, "%s/gradients.csv", dir);
    rc = rc || tt_study_write_csv_grad(path, s->gr, n, err, errlen);

    static const double scores[3] = {2, 1, 0.5}, taus[3] = {0.5, 1, 2};
    tt_study_temperature(scores, 3, taus, 3, s->soft);
    for (int i = 0; i < 3; i++) s->temps[i].tau = taus[i];
    if (!rc) rc = train_one(r, true, &s->t[0], s->temps, 3, err, errlen);
    if (!rc) rc = train_one(r, false, &s->t[1], NULL, 0, err, errlen);
    if (!rc) rc = tt_study_write_report(c, s, err, errlen);
    trace_free(&s->t[0]);
    trace_free(&s->t[1]);
    free(s);
    if (!rc) printf("\nwrote %s/report.md (with CSV files and SVG plots)\n", dir);
    return rc ? -1 : 0;
}
