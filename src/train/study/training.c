/* training.c: the study's trainings (parts 4 and 5b), a client of the run API: one model per
 * (seed, attn_scale) trained in its own run folder, with a step hook that records the loss and
 * the gradient norms of the q, k and v projections (sums of squares on slices of the gradient
 * buffer, through the backend: the gradients stay in device memory), the evaluation lines read
 * back from the run's metrics.jsonl, and on the first scaled model the maps at three
 * temperatures. The per-step norms go to attn_grad_norms.csv. */
#include "train/study/study.h"

#include "train/report/render.h"
#include "train/run/budget.h"
#include "train/run/probes.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* After every optimizer step: each layer's in_proj weight [3d,d] and bias [3d] hold q, k, v
 * as three row blocks of n/3 elements, so each projection's squared norm is one sum_squares
 * on a slice (an address computed into the gradient buffer, never read here). */
static void record_step(tt_run *r, double loss, double grad_norm, void *ctx)
{
    tt_study_trace *t = ctx;
    (void)grad_norm;
    double sq[3] = {0, 0, 0};
    for (int i = 0; i < r->model.params.n; i++) {
        const tt_param *p = r->model.params.items[i];
        if (!strstr(p->name, "self_attn.in_proj")) continue;
        const int64_t block = p->var.val.n / 3;
        for (int k = 0; k < 3; k++)
            sq[k] += r->g.be->sum_squares((const real *)p->var.grad.data + k * block, block);
    }
    TT_ASSERT_MSG(t->n_steps < t->cap, "study: more steps than the run's %d", t->cap);
    const int n = t->n_steps++;
    t->step[n] = (double)r->step;
    t->loss[n] = loss;
    for (int k = 0; k < 3; k++) t->grad[k][n] = sqrt(sq[k]);
    t->attn_grad[n] = sqrt(sq[0] + sq[1] + sq[2]);
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

/* Mean max weight and mean row entropy over every probe row, layer and head; *uniform the mean
 * entropy the same rows would have if uniform over the keys they see. */
static void map_stats(const tt_attn_epoch *e, double *max_w, double *entropy, double *uniform)
{
    double m = 0, h = 0, u = 0;
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
        u += (double)e->L * e->H * pr->T * tt_attn_uniform_entropy(pr->T, e->causal);
    }
    *max_w = rows ? m / (double)rows : 0;
    *entropy = rows ? h / (double)rows : 0;
    *uniform = rows ? u / (double)rows : 0;
}

/* Over the validation batches, as evaluation sees them: the mean of log(keys) over the real
 * query rows, keys being the real tokens of the row's sentence (causal: those up to the row). */
static double valid_uniform_entropy(tt_run *r)
{
    const int B = r->batch.B, T = r->batch.T;
    tt_rng mask;
    tt_rng_init(&mask, (uint64_t)r->cfg.seed, TT_STREAM_MASK_VALID);
    double sum = 0;
    int64_t rows = 0;
    for (int first = 0; first < r->data.valid.n; first += B) {
        tt_batch_fill(&r->batch, &r->data, &r->data.valid, NULL, first, &mask,
                      r->cfg.data.mask_prob);
        for (int b = 0; b < B; b++) {
            const int32_t *pad = r->batch.pad + (size_t)b * T;
            int all = 0;
            for (int j = 0; j < T; j++) all += !pad[j];
            for (int i = 0, seen = 0; i < T; i++) {
                seen += !pad[i];
                if (pad[i]) continue;
                sum += log(r->cfg.model.causal ? seen : all);
                rows++;
            }
        }
    }
    return rows ? sum / (double)rows : 0;
}

static void trace_alloc(tt_study_trace *t, int cap)
{
    t->cap = cap; /* allocated before training, not inside a step */
    t->step = tt_xmalloc((size_t)cap * sizeof(double));
    t->loss = tt_xmalloc((size_t)cap * sizeof(double));
    t->attn_grad = tt_xmalloc((size_t)cap * sizeof(double));
    for (int k = 0; k < 3; k++) t->grad[k] = tt_xmalloc((size_t)cap * sizeof(double));
}

void tt_study_trace_free(tt_study_trace *t)
{
    free(t->step);
    free(t->loss);
    free(t->attn_grad);
    for (int k = 0; k < 3; k++) free(t->grad[k]);
}

/* 5b: the trained model's maps with the scores divided by each tau, at inference only. */
static int temperatures(tt_run *s, const tt_run *parent, tt_study_temp *temps, int n_temps,
                        double *probe_uniform, char *err, size_t errlen)
{
    int rc = 0;
    for (int i = 0; !rc && i < n_temps; i++) {
        tt_attn_epoch e;
        double uniform;
        tt_model_set_temperature(&s->model, (real)temps[i].tau);
        tt_probe_maps(s, &e);
        map_stats(&e, &temps[i].max_w, &temps[i].entropy, &uniform);
        if (probe_uniform) *probe_uniform = uniform;
        char path[TT_CONFIG_PATH + 64], title[160];
        snprintf(path, sizeof path, "%s/temperature_%g.svg", parent->cfg.output.dir,
                 temps[i].tau);
        snprintf(title, sizeof title, "Attention weights at temperature tau = %g (scores / "
                 "(%g sqrt(d_k))): part 4's scaled model, seed %lld, epoch %d", temps[i].tau,
                 temps[i].tau, (long long)s->cfg.seed, s->epoch);
        rc = tt_render_heatmap_svg_titled(&e, title, path, err, errlen) ? -1 : 0;
        tt_attn_epoch_free(&e);
        temps[i].valid_acc = tt_run_evaluate(s).acc;
    }
    tt_model_set_temperature(&s->model, (real)s->cfg.model.attn_temperature);
    return rc;
}

/* A training's config: the parent's (shallow: the string arrays stay the parent's) with the
 * study's model width, heads and epochs. */
static void training_config(tt_config *c, const tt_config *parent, int seed_index, bool scaled)
{
    *c = *parent;
    c->study.kind = TT_STUDY_NONE;
    c->seed = parent->seed + seed_index;
    c->model.d_model = parent->study.d_model;
    c->model.n_heads = parent->study.n_heads;
    c->model.attn_scale_none = !scaled;
    c->train.epochs = parent->study.epochs;
    c->output.checkpoint_every = 0;
}

/* What the study holds at its peak: the config's own run (cli.c sets it up) and one training
 * (all are the same size, one at a time), or the measurements where they take more than the
 * training: the runtime's parts once. */
int tt_study_check_memory(const tt_config *c, const tt_corpus *d, char *err, size_t errlen)
{
    const tt_backend *be = tt_backend_open(c->device, err, errlen);
    if (!be) return -1;
    be->set_threads(c->threads);
    size_t dev_free = 0, dev_total = 0;
    const bool device = be->mem_info && be->mem_info(&dev_free, &dev_total) == 0;
    tt_config sc;
    training_config(&sc, c, 0, true);
    tt_corpus sd = *d; /* sizes only: the training's corpus is the same files, truncated */
    if (sd.train.n > TT_STUDY_TRAIN_EXAMPLES) sd.train.n = TT_STUDY_TRAIN_EXAMPLES;
    tt_mem_need n, own;
    tt_mem_need_for(&n, &sc, &sd, be, device);
    tt_mem_need_for(&own, c, d, be, device);
    tt_study_opts o = tt_study_defaults((uint64_t)c->seed);
    o.samples = c->study.samples;
    o.device = c->device;
    double training = 0;
    for (int k = 0; k < TT_MEM_PARTS; k++) {
        if (k == TT_MEM_RUNTIME || k == TT_MEM_DEVICE_RUNTIME || k == TT_MEM_BLAS) continue;
        if (!n.on_device[k]) training += n.part[k];
        n.part[k] += own.part[k];
    }
    /* the measurements' arenas are on the study's device, what they stage on the host: all
     * counted on the host, where the training's host parts are smaller */
    n.part[TT_MEM_STUDY] = fmax(0, tt_study_measure_bytes(&o) - training);
    tt_mem_need_sum(&n);
    char keys[256];
    snprintf(keys, sizeof keys, "study.samples %d, study.d_model %d, study.n_heads %d, "
             "model.d_ff %d, model.n_layers %d", c->study.samples, c->study.d_model,
             c->study.n_heads, c->model.d_ff, c->model.n_layers);
    return tt_mem_check(&n, &sc, &sd, be, keys, "lower study.samples (the measurements grow "
                        "with samples x 1024) or study.d_model (each training's model and step "
                        "grow with it)", err, errlen);
}

int tt_study_train(tt_run *parent, int seed_index, bool scaled, tt_study_trace *t,
                   tt_study_temp *temps, int n_temps, double *valid_uniform,
                   double *probe_uniform, char *err, size_t errlen)
{
    tt_run s = {0};
    training_config(&s.cfg, &parent->cfg, seed_index, scaled);
    /* the maps and the checkpoint (11 MB at the default width) of the first seed only */
    if (seed_index) s.cfg.output.attention_every = 0, s.no_checkpoints = true;
    t->name = scaled ? "sqrt_dk" : "none";
    t->seed = s.cfg.seed;
    char out[2 * TT_CONFIG_PATH];
    if (seed_index)
        snprintf(out, sizeof out, "%s/train_%s_seed%lld", parent->cfg.output.dir, t->name,
                 (long long)t->seed);
    else
        snprintf(out, sizeof out, "%s/train_%s", parent->cfg.output.dir, t->name);
    if (strlen(out) >= sizeof s.cfg.output.dir) {
        tt_errorf(err, errlen, "%s: output.dir is too long", out);
        return -1;
    }
    memcpy(s.cfg.output.dir, out, strlen(out) + 1);
    int rc = tt_corpus_load(&s.data, &s.cfg, err, errlen) ? -1 : 0;
    if (!rc && s.data.train.n > TT_STUDY_TRAIN_EXAMPLES) s.data.train.n = TT_STUDY_TRAIN_EXAMPLES;
    if (!rc) rc = tt_run_init(&s, err, errlen) ? -1 : 0;
    if (!rc) rc = tt_run_prepare_dir(&s, false, err, errlen) ? -1 : 0;
    if (!rc) {
        printf("\n== part 4: attn_scale \"%s\", seed %lld (d_model %d, %d heads, d_k %d, %d "
               "training examples)\n", t->name, (long long)t->seed, s.cfg.model.d_model,
               s.cfg.model.n_heads, s.cfg.model.d_model / s.cfg.model.n_heads, s.data.train.n);
        t->n_train = s.data.train.n;
        trace_alloc(t, (int)s.total_steps);
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
        if (valid_uniform) *valid_uniform = valid_uniform_entropy(&s);
        rc = temperatures(&s, parent, temps, n_temps, probe_uniform, err, errlen);
    }
    s.cfg.data.probes = NULL, s.cfg.data.n_probes = 0; /* the parent's */
    s.cfg.data.ambiguous = NULL, s.cfg.data.n_ambiguous = 0;
    tt_run_free(&s);
    return rc;
}

int tt_study_write_csv_grad_norms(const char *path, const tt_study_trace *t, int n, char *err,
                                  size_t errlen)
{
    tt_atomic_file o;
    if (tt_atomic_open(&o, path, err, errlen)) return -1;
    fputs("seed,variant,step,loss,grad_q,grad_k,grad_v\n", o.f);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < t[k].n_steps; i++)
            fprintf(o.f, "%lld,%s,%.0f,%.6g,%.6g,%.6g,%.6g\n", (long long)t[k].seed, t[k].name,
                    t[k].step[i], t[k].loss[i], t[k].grad[0][i], t[k].grad[1][i],
                    t[k].grad[2][i]);
    return tt_atomic_close(&o, true, err, errlen);
}
