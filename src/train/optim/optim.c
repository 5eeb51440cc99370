/* optim.c: AdamW and SGD over the flat parameter buffer, global-norm gradient clipping and the
 * learning-rate schedules (the update rules are stated in optim.h). Each optimizer is one
 * backend call over every element of ps->data / ps->grad, padding included: padding gradients
 * are 0, so padding values stay 0 (AdamW decays 0 to 0; m, v and the update stay 0).
 * Numerics follow PyTorch's single-tensor code (torch 1.13) operation by operation, so the
 * float64 build reproduces torch.optim to the last few ulps: scalars (bias corrections, step
 * size) in double here, the element loop in `real` on the device (tensor/cpu/optimizer.c), in
 * PyTorch's order: decay, moments, update. */
#include "train/optim/optim.h"

#include "tensor/backend.h"

#include <math.h>

#define TT_PI 3.14159265358979323846

void tt_optim_init(tt_optim *o, tt_params *ps, const tt_config *c)
{
    TT_ASSERT_MSG(ps->data && ps->grad, "tt_optim_init before tt_params_finalize");
    *o = (tt_optim){.kind = c->train.optimizer, .lr = c->train.lr, .beta1 = c->train.beta1,
                    .beta2 = c->train.beta2, .eps = c->train.eps,
                    .weight_decay = c->train.weight_decay, .momentum = c->train.momentum,
                    .t = 0, .ps = ps};
    /* Both buffers for either optimizer, so a checkpoint never meets a NULL (SGD leaves v 0). */
    const tt_backend *be = tt_backend_get(ps->device);
    size_t bytes = (size_t)(ps->numel ? ps->numel : 1) * sizeof(real);
    o->m = be->alloc(bytes);
    o->v = be->alloc(bytes);
    be->zero(o->m, bytes);
    be->zero(o->v, bytes);
}

void tt_optim_free(tt_optim *o)
{
    if (o->ps) {
        const tt_backend *be = tt_backend_get(o->ps->device);
        if (o->m) be->free(o->m);
        if (o->v) be->free(o->v);
    }
    *o = (tt_optim){0};
}

/* The bias corrections and the step size in double, rounded once to real, as PyTorch's
 * single-tensor AdamW computes them; the element loop is the backend's adamw_step. */
static void adamw_step(tt_optim *o, const tt_backend *be, double lr, const real *gate)
{
    double bc1 = 1.0 - pow(o->beta1, (double)o->t);
    double bc2 = 1.0 - pow(o->beta2, (double)o->t);
    tt_adamw_scalars s = {.decay = (real)(1.0 - lr * o->weight_decay), .b1 = (real)o->beta1,
                          .a1 = (real)(1.0 - o->beta1), .b2 = (real)o->beta2,
                          .a2 = (real)(1.0 - o->beta2), .step = (real)(lr / bc1),
                          .bc2_sqrt = (real)sqrt(bc2), .eps = (real)o->eps};
    be->adamw_step(o->ps->data, o->m, o->v, o->ps->grad, &s, gate, o->ps->numel);
}

static void sgd_step(tt_optim *o, const tt_backend *be, double lr, const real *gate)
{
    tt_sgd_scalars s = {.wd = (real)o->weight_decay, .mu = (real)o->momentum,
                        .neg_lr = (real)-lr, .first = o->t == 1, .use_buf = o->momentum != 0.0};
    be->sgd_step(o->ps->data, o->m, o->ps->grad, &s, gate, o->ps->numel);
}

void tt_optim_step(tt_optim *o, double lr, const real *gate)
{
    TT_ASSERT_MSG(o->ps && o->m && o->v, "tt_optim_step before tt_optim_init");
    const tt_backend *be = tt_backend_get(o->ps->device);
    o->t++;
    switch (o->kind) {
    case TT_OPT_ADAMW: adamw_step(o, be, lr, gate); break;
    case TT_OPT_SGD: sgd_step(o, be, lr, gate); break;
    default: TT_ASSERT_MSG(0, "tt_optim_step: unknown optimizer %d", (int)o->kind);
    }
}

/* n = sqrt(sum g^2) accumulated in double over the whole gradient buffer (padding is 0), on
 * the device (the backend's clip_grads). PyTorch takes the norm of the per-parameter norms:
 * the same value up to rounding. */
void tt_clip_grads(tt_params *ps, double max_norm, double *norm)
{
    TT_ASSERT_MSG(ps->grad || ps->numel == 0, "tt_clip_grads before tt_params_finalize");
    tt_backend_get(ps->device)->clip_grads(ps->grad, ps->numel, max_norm, norm);
}

double tt_clip_grad_norm(tt_params *ps, double max_norm)
{
    const tt_backend *be = tt_backend_get(ps->device);
    double *dev = be->alloc(sizeof(double)), norm;
    tt_clip_grads(ps, max_norm, dev);
    be->to_host(&norm, dev, sizeof norm);
    be->free(dev);
    return norm;
}

/* f never exceeds 1: past `total` the decays stay at 0 (cosine would rise again). */
double tt_schedule_lr(tt_schedule s, double lr, int64_t k, int64_t warmup, int64_t total)
{
    TT_ASSERT_MSG(k >= 0 && warmup >= 0, "tt_schedule_lr: step %lld, warmup %lld",
                  (long long)k, (long long)warmup);
    if (k < warmup) return lr * (double)(k + 1) / (double)warmup;
    int64_t span = total - warmup > 1 ? total - warmup : 1;
    double f = (double)(k - warmup) / (double)span;
    if (f > 1.0) f = 1.0;
    switch (s) {
    case TT_SCHED_CONSTANT: return lr;
    case TT_SCHED_LINEAR: return lr * (1.0 - f);
    case TT_SCHED_COSINE: return lr * 0.5 * (1.0 + cos(TT_PI * f));
    default: TT_ASSERT_MSG(0, "tt_schedule_lr: unknown schedule %d", (int)s);
    }
    return lr;
}
