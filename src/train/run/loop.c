/* loop.c: the training loop of ./train and its run directory. Each epoch: shuffle, steps (forward, loss, backward, clip, schedule, optimizer), a metrics line
 * per output.log_every steps, validation, an evaluation line, a checkpoint when due. A loss
 * that is not finite stops the run before the optimizer touches the parameters. */
#include "train/run/probes.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* mkdir -p */
static int make_dirs(const char *path, char *err, size_t errlen)
{
    char buf[2 * TT_CONFIG_PATH];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        bool end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return tt_errorf(err, errlen, "%s: cannot create the directory: %s", buf,
                                 strerror(errno));
            struct stat st;
            if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
                return tt_errorf(err, errlen, "%s: exists and is not a directory", buf);
            if (end) return 0;
            *p = '/';
        }
    }
}

static int write_text_atomic(const char *path, const char *text, char *err, size_t errlen)
{
    tt_atomic_file o;
    if (tt_atomic_open(&o, path, err, errlen)) return -1;
    bool ok = fputs(text, o.f) >= 0 && fputc('\n', o.f) != EOF;
    if (!ok) tt_errorf(err, errlen, "%s: cannot write %s", path, o.tmp);
    return tt_atomic_close(&o, ok, err, errlen);
}

static void progress(const tt_run *r, int step_in_epoch, double loss, double tps, double t0)
{
    const int width = 24;
    int done = (int)((double)width * step_in_epoch / r->steps_per_epoch);
    double elapsed = now() - t0;
    double eta = step_in_epoch ? elapsed / step_in_epoch * (r->steps_per_epoch - step_in_epoch)
                               : 0;
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < done ? '=' : i == done ? '>' : ' ';
    bar[width] = '\0';
    printf("\repoch %d/%d [%s] %d/%d  loss %.4f  %.0f tok/s  ETA %.0fs   ", r->epoch + 1,
           r->cfg.train.epochs, bar, step_in_epoch, r->steps_per_epoch, loss, tps, eta);
    fflush(stdout);
}

/* One epoch of training; 0, or -1 with err filled when the loss is not finite. */
static int train_epoch(tt_run *r, double *mean_loss, double *tps_out, double *grad_norm,
                       char *err, size_t errlen)
{
    const tt_config *c = &r->cfg;
    const bool tty = isatty(fileno(stdout));
    tt_shuffle(r->order, r->data.train.n, (uint64_t)c->seed, r->epoch + 1);
    double t0 = now(), loss_sum = 0, last_draw = 0;
    int64_t tokens = 0;
    r->g.training = true;
    for (int s = 0; s < r->steps_per_epoch; s++) {
        tt_batch_fill(&r->batch, &r->data, &r->data.train, r->order, s * r->batch.B, &r->mask,
                      c->data.mask_prob);
        tt_var *logits;
        tt_var *loss = tt_run_forward(r, &r->batch, &logits, NULL);
        real l;
        r->g.be->to_host(&l, loss->val.data, sizeof l);
        if (!isfinite((double)l)) {
            if (tty) printf("\n");
            return tt_errorf(err, errlen, "step %lld (epoch %d): the loss is %g; stopping before "
                             "the update. The checkpoints already written are intact.\nHINT: "
                             "lower train.lr, or set train.grad_clip", (long long)r->step + 1,
                             r->epoch + 1, (double)l);
        }
        tt_params_zero_grad(&r->model.params);
        tt_backward(&r->g, loss);
        *grad_norm = tt_clip_grad_norm(&r->model.params, c->train.grad_clip);
        double lr = tt_schedule_lr(c->train.schedule, c->train.lr, r->step,
                                   c->train.warmup_steps, r->total_steps);
        tt_optim_step(&r->opt, lr);
        r->step++;
        if (r->on_step) r->on_step(r, (double)l, *grad_norm, r->on_step_ctx);
        loss_sum += (double)l;
        tokens += r->batch.n_tokens;
        double tps = (double)tokens / (now() - t0);
        if (r->step % c->output.log_every == 0)
            fprintf(r->metrics, "{\"step\": %lld, \"epoch\": %d, \"loss\": %.9g, \"lr\": %.9g, "
                    "\"grad_norm\": %.9g, \"tokens_per_s\": %.1f}\n", (long long)r->step,
                    r->epoch + 1, (double)l, lr, *grad_norm, tps);
        if (tty && (now() - last_draw > 0.1 || s + 1 == r->steps_per_epoch)) {
            progress(r, s + 1, loss_sum / (s + 1), tps, t0);
            last_draw = now();
        }
    }
    *mean_loss = loss_sum / r->steps_per_epoch;
    *tps_out = (double)tokens / (now() - t0);
    return 0;
}

/* The validation fields of an evaluation line, and the mean attention entropy per layer and
 * head; closes the line. */
static void write_eval(tt_run *r, const tt_eval *e)
{
    const int L = r->cfg.model.n_layers, H = r->cfg.model.n_heads;
    fprintf(r->metrics, "\"valid_loss\": %.9g, \"valid_acc\": %.9g", e->loss, e->acc);
    if (r->data.n_ambiguous)
        fprintf(r->metrics, ", \"valid_acc_ambiguous\": %.9g", e->acc_ambiguous);
    fprintf(r->metrics, ", \"attention_entropy\": [");
    for (int l = 0; l < L; l++) {
        fprintf(r->metrics, "%s[", l ? ", " : "");
        for (int h = 0; h < H; h++)
            fprintf(r->metrics, "%s%.6g", h ? ", " : "", r->entropy[l * H + h]);
        fprintf(r->metrics, "]");
    }
    fprintf(r->metrics, "]}\n");
    fflush(r->metrics);
    tt_loss_plot_update(r->cfg.output.dir);
}

static bool dump_due(const tt_config *c, int epoch)
{
    return c->data.n_probes && c->output.attention_every &&
           (epoch % c->output.attention_every == 0 || epoch == c->train.epochs);
}

void tt_run_describe(const tt_run *r)
{
    const tt_config *c = &r->cfg;
    const tt_corpus *d = &r->data;
    printf("task %s: %d train / %d valid examples, %d words, %d outputs", tt_task_name(d->task),
           d->train.n, d->valid.n, d->words.n, tt_corpus_n_out(d));
    if (d->train.n_truncated || d->valid.n_truncated)
        printf(" (%d + %d lines truncated to %d words)", d->train.n_truncated,
               d->valid.n_truncated, d->seq_len);
    printf("\nmodel: %d layers, d_model %d, %d heads, d_ff %d, %s-LN, %lld parameters\n",
           c->model.n_layers, c->model.d_model, c->model.n_heads, c->model.d_ff,
           c->model.pre_norm ? "pre" : "post", (long long)r->model.params.numel);
    if (c->matmul_high && c->device != TT_CUDA)
        printf("note: matmul_precision \"high\" has no effect on the %s (float32 throughout)\n",
               tt_device_name(c->device));
    for (int i = 0; i < c->data.n_probes; i++) {
        int n = tt_tokenize(&d->words, c->data.probes[i], NULL, 0);
        if (n > c->data.seq_len)
            printf("note: data.probes[%d] has %d words; its maps show the first %d "
                   "(data.seq_len)\n", i, n, c->data.seq_len);
    }
    printf("train: %d epochs x %d steps, batch %d x %d, %s, lr %g; %.1f MB step arena; "
           "output %s\n", c->train.epochs, r->steps_per_epoch, c->train.batch_size,
           c->data.seq_len, c->train.optimizer == TT_OPT_SGD ? "sgd" : "adamw", c->train.lr,
           (double)r->arena.cap / 1e6, c->output.dir);
}

int tt_run_train(tt_run *r, char *err, size_t errlen)
{
    const tt_config *c = &r->cfg;
    const bool tty = isatty(fileno(stdout));
    char path[TT_CONFIG_PATH + 64];
    double best = -1, t_start = now();
    tt_attn_epoch maps = {0};
    if (r->epoch >= c->train.epochs) {
        printf("nothing to do: the checkpoint has %d epochs, train.epochs is %d\n", r->epoch,
               c->train.epochs);
        return 0;
    }
    if (r->epoch == 0) { /* before any training: the baseline and the epoch-0 maps */
        tt_eval e = tt_run_evaluate(r);
        fprintf(r->metrics, "{\"step\": 0, \"epoch\": 0, ");
        write_eval(r, &e);
        printf("epoch   0/%d  valid_loss %.4f  valid_acc %.4f (before training)\n",
               c->train.epochs, e.loss, e.acc);
        if (dump_due(c, 0) && tt_attention_dump(r, &maps, err, errlen)) return -1;
    }
    int rc = 0;
    while (r->epoch < c->train.epochs && rc == 0) {
        double loss = 0, tps = 0, grad_norm = 0, t0 = now();
        if ((rc = train_epoch(r, &loss, &tps, &grad_norm, err, errlen))) break;
        r->epoch++;
        tt_eval e = tt_run_evaluate(r);
        double lr = tt_schedule_lr(c->train.schedule, c->train.lr, r->step - 1,
                                   c->train.warmup_steps, r->total_steps);
        fprintf(r->metrics, "{\"step\": %lld, \"epoch\": %d, \"loss\": %.9g, \"lr\": %.9g, "
                "\"grad_norm\": %.9g, \"tokens_per_s\": %.1f, ", (long long)r->step, r->epoch,
                loss, lr, grad_norm, tps);
        write_eval(r, &e);
        if (tty) printf("\r\033[K");
        printf("epoch %3d/%d  loss %.4f  valid_loss %.4f  valid_acc %.4f", r->epoch,
               c->train.epochs, loss, e.loss, e.acc);
        if (r->data.n_ambiguous) printf("  ambiguous %.4f", e.acc_ambiguous);
        printf("  %.0f tok/s  %.1fs\n", tps, now() - t0);
        fflush(stdout);
        if (e.acc > best) best = e.acc;
        bool last = r->epoch == c->train.epochs;
        if (last || (c->output.checkpoint_every && r->epoch % c->output.checkpoint_every == 0)) {
            snprintf(path, sizeof path, "%s/checkpoints/epoch_%03d.safetensors", c->output.dir,
                     r->epoch);
            rc = tt_checkpoint_save(r, path, err, errlen);
        }
        if (!rc && dump_due(c, r->epoch)) rc = tt_attention_dump(r, &maps, err, errlen);
        if (last && !rc) {
            tt_attention_show(stdout, &maps);
            printf("done in %.1fs: valid_acc %.4f (best %.4f)", now() - t_start, e.acc, best);
            if (r->data.n_ambiguous) printf(", on the ambiguous words %.4f", e.acc_ambiguous);
            printf("\nwrote %s/metrics.jsonl, %s/config.json and %s\n", c->output.dir,
                   c->output.dir, path);
            if (c->data.n_probes && c->output.attention_every)
                printf("attention maps: %s/attention/index.html\n", c->output.dir);
        }
    }
    tt_attn_epoch_free(&maps);
    return rc;
}

int tt_run_prepare_dir(tt_run *r, bool append, char *err, size_t errlen)
{
    char path[TT_CONFIG_PATH + 64];
    const char *sub[2] = {"checkpoints", "attention"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", r->cfg.output.dir, sub[i]);
        if (make_dirs(path, err, errlen)) return -1;
    }
    char *json = tt_config_to_json(&r->cfg);
    snprintf(path, sizeof path, "%s/config.json", r->cfg.output.dir);
    int bad = write_text_atomic(path, json, err, errlen);
    free(json);
    snprintf(path, sizeof path, "%s/metrics.jsonl", r->cfg.output.dir);
    if (!bad && !(r->metrics = fopen(path, append ? "a" : "w")))
        bad = tt_errorf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return bad ? -1 : 0;
}
