/* loop.c: the training loop of ./train. Each epoch: shuffle, steps (tt_run_step: forward, loss,
 * backward, clip, schedule, optimizer; bench/bench_step.c times that same call), a metrics line
 * per output.log_every steps (metrics.c), validation, an evaluation line, a checkpoint when due.
 * A loss that is not finite stops the run before the optimizer touches the parameters; a
 * signal (signals.c) after the current step, with a checkpoint of that point (step_NNNNNNNN
 * mid-epoch), from which a resume continues the epoch exactly. On a terminal a progress line,
 * as wide as the terminal allows, is redrawn in place. The run's folder is folder.c's. */
#include "train/run/probes.h"

#include "train/run/dist.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

/* The process that writes the run's files: rank 0 (the only one without MPI). */
static bool lead(void) { return tt_dist_rank() == 0; }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The text of one field of the progress line (the bar: `cells` wide). */
enum { F_EPOCH, F_BAR, F_STEPS, F_LOSS, F_TPS, F_ETA, N_FIELDS };

static int field(char *out, size_t len, const tt_progress *p, int f, int cells)
{
    switch (f) {
    case F_EPOCH: return snprintf(out, len, "epoch %d/%d", p->epoch, p->epochs);
    case F_STEPS: return snprintf(out, len, " %d/%d", p->step, p->steps);
    case F_LOSS: return snprintf(out, len, "  loss %.4f", p->loss);
    case F_TPS: return snprintf(out, len, "  %.0f tok/s", p->tokens_per_s);
    case F_ETA: return snprintf(out, len, "  ETA %.0fs", p->eta_s);
    default: break;
    }
    char bar[32];
    int done = p->steps > 0 ? (int)((double)cells * p->step / p->steps) : 0, n = 0;
    for (; n < cells && n < 31; n++) bar[n] = n < done ? '=' : n == done ? '>' : ' ';
    bar[n] = '\0';
    return snprintf(out, len, " [%s]", bar);
}

const char *tt_progress_format(char *out, size_t len, const tt_progress *p, int width)
{
    /* the fields in the order they go when the line is too wide */
    static const int drop_order[] = {F_TPS, F_ETA, F_BAR, F_LOSS, F_STEPS};
    char piece[160];
    int fixed[N_FIELDS];
    tt_progress last = *p; /* widths at the epoch's last step: the bar keeps its size */
    last.step = p->steps;
    for (int f = 0; f < N_FIELDS; f++) fixed[f] = field(piece, sizeof piece, &last, f, 0);
    bool on[N_FIELDS] = {true, true, true, true, true, true};
    int cells = 0;
    for (int dropped = 0;; on[drop_order[dropped++]] = false) {
        int used = 0;
        for (int f = 0; f < N_FIELDS; f++) used += on[f] ? fixed[f] : 0;
        cells = width - 1 - used < 24 ? width - 1 - used : 24; /* the bar's cells */
        if (dropped == 5 || (on[F_BAR] ? cells >= 5 : used < width)) break;
    }
    size_t n = 0;
    out[0] = '\0';
    for (int f = 0; f < N_FIELDS && n < len; f++)
        if (on[f]) n += (size_t)field(out + n, len - n, p, f, cells);
    if (strlen(out) >= (size_t)(width > 0 ? width : 1)) /* narrower than "epoch 3/10" */
        out[width > 0 ? width - 1 : 0] = '\0';
    return out;
}

/* The terminal's columns: stdout's window size, else $COLUMNS, else 80. */
static int terminal_width(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *env = getenv("COLUMNS");
    int n = env ? atoi(env) : 0;
    return n > 0 ? n : 80;
}

static void progress(const tt_run *r, int step_in_epoch, double loss, double tps, double t0)
{
    double elapsed = now() - t0;
    tt_progress p = {.epoch = r->epoch + 1, .epochs = r->cfg.train.epochs,
                     .step = step_in_epoch, .steps = r->steps_per_epoch, .loss = loss,
                     .tokens_per_s = tps,
                     .eta_s = step_in_epoch ? elapsed / step_in_epoch *
                                                  (r->steps_per_epoch - step_in_epoch)
                                            : 0};
    char line[512];
    printf("\r%s\033[K", tt_progress_format(line, sizeof line, &p, terminal_width()));
    fflush(stdout);
}

/* The targets of this process's batch (those not TT_IGNORE_INDEX). */
static int64_t batch_targets(const tt_run *r)
{
    const tt_batch *b = &r->batch;
    const int64_t n = r->data.task == TT_TASK_CLASSIFY ? b->B : (int64_t)b->B * b->T;
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) count += b->targets[i] != TT_IGNORE_INDEX;
    return count;
}

/* The loss this process computed, read from the device. */
static double share_loss(const tt_run *r, const tt_var *loss)
{
    real l;
    r->g.be->to_host(&l, loss->val.data, sizeof l);
    return (double)l;
}

double tt_run_grads(tt_run *r, tt_var *loss)
{
    double global = 0.0;
    real seed = R(1);
    r->step_tokens = r->batch.n_tokens;
    if (r->batch.parts > 1) {
        const double l = share_loss(r, loss);
        /* one small sum over the ranks: the whole batch's loss (a mean over all its targets),
         * its tokens, and whether any rank caught a signal (all stop after the same step) */
        const int64_t mine = batch_targets(r);
        double v[4] = {(double)l * (double)mine, (double)mine, (double)r->batch.n_tokens,
                       tt_signal_caught() ? 1.0 : 0.0};
        tt_dist_sum(v, 4);
        global = v[1] > 0 ? v[0] / v[1] : 0.0;
        seed = v[1] > 0 ? (real)((double)mine / v[1]) : R(0);
        r->step_tokens = (int64_t)v[2];
        r->stop_agreed = v[3] > 0;
    }
    if (!isfinite(global)) return global; /* before anything is updated, on every rank */
    tt_params_zero_grad(&r->model.params);
    tt_backward_seeded(&r->g, loss, seed);
    tt_dist_sum_grads(&r->model.params);
    return global;
}

double tt_run_loss(const tt_run *r, const tt_var *loss, double summed)
{
    return r->batch.parts > 1 ? summed : share_loss(r, loss);
}

double tt_run_step(tt_run *r, int s, double *grad_norm, double *lr)
{
    const tt_config *c = &r->cfg;
    const tt_backend *be = r->g.be;
    tt_batch_fill(&r->batch, &r->data, &r->data.train, r->order, s * c->train.batch_size,
                  &r->mask, c->data.mask_prob);
    be->step_begin(&r->dropout);
    tt_var *logits, *loss = tt_run_forward(r, &r->batch, &logits, NULL);
    double summed = tt_run_grads(r, loss);
    if (!isfinite(summed)) { /* several ranks: known before the backward */
        be->step_end();
        return summed;
    }
    tt_clip_grads(&r->model.params, c->train.grad_clip, r->step_norm);
    *lr = tt_run_lr(r, r->step);
    tt_optim_step(&r->opt, *lr, loss->val.data); /* no update unless the loss is finite */
    be->step_end();
    be->to_host(grad_norm, r->step_norm, sizeof *grad_norm);
    double l = tt_run_loss(r, loss, summed);
    if (!isfinite(l)) r->opt.t--; /* the device skipped the update: t takes it back */
    return l;
}

const char *tt_run_nonfinite_hint(const tt_config *c, bool updated, char *buf, size_t len)
{
    const double tau = c->model.attn_temperature, lr = c->train.lr, wd = c->train.weight_decay;
    /* a weight decay >= 1 is far from the usual 0.01 and named first; then the learning rate
     * and the temperature, the one further from the usual (how many times) first */
    const double lr_times = lr / (c->train.optimizer == TT_OPT_SGD ? 0.1 : 1e-3);
    const bool lr_first = lr_times > 1 / tau;
    char said[4][160];
    int n = 0;
    if (updated && wd >= 1 && lr * wd >= 1)
        snprintf(said[n], sizeof said[n], "lower train.weight_decay (%g: with train.lr %g each "
                 "update scales the weights by 1 - lr*wd = %g)", wd, lr, 1 - lr * wd), n++;
    if (updated && lr_first) snprintf(said[n], sizeof said[n], "lower train.lr (%g)", lr), n++;
    if (tau < 1e-3)
        snprintf(said[n], sizeof said[n], "raise model.attn_temperature (%g: the scores and their "
                 "gradients are divided by it; 1 is the usual)", tau), n++;
    if (updated && !lr_first) snprintf(said[n], sizeof said[n], "lower train.lr (%g)", lr), n++;
    if (updated && c->train.grad_clip == 0)
        snprintf(said[n], sizeof said[n], "set train.grad_clip (0: off; 1 is the usual)"), n++;
    size_t k = (size_t)snprintf(buf, len, "HINT: %s", updated ? "" : "it came before the first "
                                "update, so not from train.lr: ");
    if (!n)
        snprintf(buf + k, k < len ? len - k : 0, "look at the model's values (model.*) and the "
                 "data");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(buf + k, k < len ? len - k : 0, "%s%s", i ? ", or " : "", said[i]);
    return buf;
}

/* A signal was caught: on one process, now; over several, by any rank at this step's sum,
 * which every rank saw. */
static bool stop_due(const tt_run *r)
{
    return r->batch.parts > 1 ? r->stop_agreed : tt_signal_caught() != 0;
}

/* One epoch of training, from step r->epoch_step of it (a mid-epoch checkpoint's); 0 when the
 * epoch is done, 1 when a signal stops it before its last step, or -1 with err filled (a loss
 * that is not finite, a metrics line that cannot be written). */
static int train_epoch(tt_run *r, double *mean_loss, double *tps_out, double *grad_norm,
                       char *err, size_t errlen)
{
    const tt_config *c = &r->cfg;
    const bool tty = isatty(fileno(stdout));
    /* the shuffle depends on (seed, epoch) alone: a resumed epoch draws the same order */
    tt_shuffle(r->order, r->data.train.n, (uint64_t)c->seed, r->epoch + 1);
    double t0 = now(), last_draw = 0, tps = 0;
    const int64_t tokens0 = r->epoch_tokens; /* tokens per second: this process's share */
    r->g.training = true;
    for (int s = r->epoch_step; s < r->steps_per_epoch; s++) {
        double lr = 0, l = tt_run_step(r, s, grad_norm, &lr);
        if (!isfinite(l)) {
            r->err_all = true; /* the whole batch's loss: every rank stops here */
            if (tty) printf("\n");
            char hint[768];
            return tt_errorf(err, errlen, "step %lld (epoch %d): the loss is %g; stopping before "
                             "the update. The checkpoints already written are intact.\n%s",
                             (long long)r->step + 1, r->epoch + 1, l,
                             tt_run_nonfinite_hint(c, r->step > 0, hint, sizeof hint));
        }
        r->step++;
        r->epoch_step = s + 1;
        r->epoch_loss_sum += l;
        r->epoch_tokens += r->step_tokens;
        if (r->on_step) r->on_step(r, l, *grad_norm, r->on_step_ctx);
        tps = (double)(r->epoch_tokens - tokens0) / (now() - t0);
        const tt_metrics_row m = {l, lr, *grad_norm, tps};
        if (r->step % c->output.log_every == 0 && lead() &&
            tt_metrics_step(r, &m, err, errlen)) {
            if (tty) printf("\n");
            return -1;
        }
        if (tty && (now() - last_draw > 0.1 || s + 1 == r->steps_per_epoch)) {
            progress(r, s + 1, r->epoch_loss_sum / (s + 1), tps, t0);
            last_draw = now();
        }
        if (stop_due(r) && s + 1 < r->steps_per_epoch) return 1;
    }
    *mean_loss = r->epoch_loss_sum / r->steps_per_epoch;
    *tps_out = tps;
    r->epoch_step = 0, r->epoch_loss_sum = 0, r->epoch_tokens = 0;
    return 0;
}

/* checkpoints/ and attention/ are made with their first file, so that a run without probes,
 * or a study's, leaves no empty folder. */
static int make_subdir(const tt_run *r, const char *sub, char *err, size_t errlen)
{
    char dir[TT_CONFIG_PATH + 16];
    snprintf(dir, sizeof dir, "%s/%s", r->cfg.output.dir, sub);
    return tt_make_dirs(dir, err, errlen);
}

static bool dump_due(const tt_config *c, int epoch)
{
    return c->data.n_probes && c->output.attention_every &&
           (epoch % c->output.attention_every == 0 || epoch == c->train.epochs);
}

/* A note when training goes past the end of the lr schedule (train.schedule_epochs, or the
 * checkpoint's span on --resume): from there the rate stays at the schedule's final one. */
static void describe_schedule_end(const tt_run *r)
{
    const tt_config *c = &r->cfg;
    const int span = c->train.schedule_epochs, epochs = c->train.epochs;
    if (c->train.schedule == TT_SCHED_CONSTANT || epochs <= span) return;
    int64_t k = r->step > r->total_steps ? r->step : r->total_steps; /* first step past it */
    int64_t all = (int64_t)r->steps_per_epoch * epochs;
    double stretched = tt_schedule_lr(c->train.schedule, c->train.lr, k, c->train.warmup_steps,
                                      all);
    printf("note: the %s learning-rate schedule spans %d epochs (train.schedule_epochs%s); "
           "epochs %d-%d keep its final rate %g. --set train.schedule_epochs=%d stretches it "
           "over all %d epochs (the rate of step %lld would then be %g)\n",
           c->train.schedule == TT_SCHED_LINEAR ? "linear" : "cosine", span,
           c->train.schedule_epochs_set ? "" : ", as in the checkpoint", span + 1, epochs,
           tt_run_lr(r, k), epochs, epochs, (long long)k + 1, stretched);
}

void tt_run_describe(const tt_run *r)
{
    const tt_config *c = &r->cfg;
    const tt_corpus *d = &r->data;
    printf("task %s: %d train / %d valid examples", tt_task_name(d->task), d->train.n,
           d->valid.n);
    if (c->data.valid_share > 0)
        printf(" (valid: a share of %g of the training file, drawn by seed %lld)",
               c->data.valid_share, (long long)c->seed);
    printf(", %d words, %d outputs", d->words.n, tt_corpus_n_out(d));
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
    describe_schedule_end(r);
    if (c->device == TT_CUDA)
        printf("steps: %s\n",
               r->replay          ? "captured once as a CUDA graph (the second), then replayed"
               : !c->cuda_graphs ? "every call launched (cuda_graphs false)"
                                 : "every call launched (data parallel: sums on the host)");
    if (tt_dist_nccl(c->device == TT_CUDA))
        printf("gradients: summed by NCCL over %d process%s (one GPU each)\n", tt_dist_size(),
               tt_dist_size() > 1 ? "es" : "");
}

/* An evaluation line (m NULL: epoch 0's), then loss.svg drawn again from metrics.jsonl. */
static int write_eval(tt_run *r, const tt_metrics_row *m, const tt_eval *e, char *err,
                      size_t errlen)
{
    if (!lead()) return 0;
    if (tt_metrics_eval(r, m, e, err, errlen)) return -1;
    return tt_loss_plot_update(r->cfg.output.dir, err, errlen);
}

/* A signal was noted: the checkpoint of this point (mid-epoch checkpoints/step_NNNNNNNN, else
 * the epoch's), unless `written` already or the run keeps none; then -1 with the interruption
 * in err, stop_signal and stop_checkpoint set. The checkpoint is whole or absent: its write is
 * atomic, and a second SIGINT or SIGTERM ends the process at once. */
static int stop(tt_run *r, const char *written, char *err, size_t errlen)
{
    const tt_config *c = &r->cfg;
    char *path = r->stop_checkpoint;
    if (r->on_stop) r->on_stop(r, NAN, NAN, r->on_step_ctx);
    /* every rank stops with one signal, whichever each caught (or none, a rank that stops as
     * the others do): one exit status for the job, before rank 0's checkpoint can fail */
    const int sig = tt_dist_max(tt_signal_caught());
    snprintf(path, TT_RUN_CKPT_PATH, "%s", written ? written : "");
    if (!written && !r->no_checkpoints && lead()) {
        if (r->epoch_step)
            snprintf(path, TT_RUN_CKPT_PATH, "%s/checkpoints/step_%08lld.safetensors",
                     c->output.dir, (long long)r->step);
        else
            snprintf(path, TT_RUN_CKPT_PATH, "%s/checkpoints/epoch_%03d.safetensors",
                     c->output.dir, r->epoch);
        if (make_subdir(r, "checkpoints", err, errlen) ||
            tt_checkpoint_save(r, path, err, errlen))
            return -1; /* exit status 2: the checkpoint could not be written */
    }
    r->stop_signal = sig ? sig : SIGTERM;
    const char *name = tt_signal_name(r->stop_signal);
    if (r->epoch_step)
        return tt_errorf(err, errlen, "interrupted (%s) at step %lld, epoch %d step %d/%d", name,
                         (long long)r->step, r->epoch + 1, r->epoch_step, r->steps_per_epoch);
    return tt_errorf(err, errlen, "interrupted (%s) at step %lld, the end of epoch %d", name,
                     (long long)r->step, r->epoch);
}

int tt_run_train(tt_run *r, char *err, size_t errlen)
{
    const tt_config *c = &r->cfg;
    const bool tty = isatty(fileno(stdout));
    char path[TT_RUN_CKPT_PATH];
    double best = -1, t_start = now();
    tt_attn_epoch maps = {0};
    if (r->epoch >= c->train.epochs) {
        printf("nothing to do: the checkpoint has %d epochs, train.epochs is %d\n", r->epoch,
               c->train.epochs);
        return 0;
    }
    if (lead()) tt_metrics_begin(r);
    if (r->epoch == 0 && r->epoch_step == 0) { /* before any training: the baseline, maps */
        tt_eval e = tt_run_evaluate(r);
        if (write_eval(r, NULL, &e, err, errlen)) return -1;
        printf("epoch   0/%d  valid_loss %.4f  valid_acc %.4f (before training)\n",
               c->train.epochs, e.loss, e.acc);
        if (lead() && dump_due(c, 0) && (make_subdir(r, "attention", err, errlen) ||
                               tt_attention_dump(r, &maps, err, errlen)))
            return -1;
    }
    int rc = 0;
    while (r->epoch < c->train.epochs && rc == 0) {
        double loss = 0, tps = 0, grad_norm = 0, t0 = now();
        if ((rc = train_epoch(r, &loss, &tps, &grad_norm, err, errlen))) {
            if (rc > 0) rc = stop(r, NULL, err, errlen);
            break;
        }
        r->epoch++;
        tt_eval e = tt_run_evaluate(r);
        const tt_metrics_row m = {loss, tt_run_lr(r, r->step - 1), grad_norm, tps};
        if ((rc = write_eval(r, &m, &e, err, errlen))) break;
        if (tty) printf("\r\033[K");
        printf("epoch %3d/%d  loss %.4f  valid_loss %.4f  valid_acc %.4f", r->epoch,
               c->train.epochs, loss, e.loss, e.acc);
        if (r->data.n_ambiguous) printf("  ambiguous %.4f", e.acc_ambiguous);
        printf("  %.0f tok/s  %.1fs\n", tps, now() - t0);
        fflush(stdout);
        if (e.acc > best) best = e.acc;
        bool last = r->epoch == c->train.epochs;
        bool due = !r->no_checkpoints &&
                   (last || (c->output.checkpoint_every &&
                             r->epoch % c->output.checkpoint_every == 0));
        if (due && lead()) {
            snprintf(path, sizeof path, "%s/checkpoints/epoch_%03d.safetensors", c->output.dir,
                     r->epoch);
            rc = make_subdir(r, "checkpoints", err, errlen) ||
                 tt_checkpoint_save(r, path, err, errlen);
        }
        if (!rc && lead() && dump_due(c, r->epoch))
            rc = make_subdir(r, "attention", err, errlen) ||
                 tt_attention_dump(r, &maps, err, errlen);
        /* a signal during the epoch's last step or its evaluation: stopped at its end */
        if (!rc && !last && tt_dist_any(tt_signal_caught()))
            rc = stop(r, due ? path : NULL, err, errlen);
        if (last && !rc) {
            tt_attention_show(stdout, &maps);
            printf("done in %.1fs: valid_acc %.4f (best %.4f)", now() - t_start, e.acc, best);
            if (r->data.n_ambiguous) printf(", on the ambiguous words %.4f", e.acc_ambiguous);
            printf("\nwrote %s/metrics.jsonl%s%s/config.json%s%s\n", c->output.dir,
                   r->no_checkpoints ? " and " : ", ", c->output.dir,
                   r->no_checkpoints ? "" : " and ", r->no_checkpoints ? "" : path);
            if (c->data.n_probes && c->output.attention_every)
                printf("attention maps: %s/attention/index.html\n", c->output.dir);
        }
    }
    tt_attn_epoch_free(&maps);
    return rc;
}
