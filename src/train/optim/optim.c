/* optim.c: AdamW and SGD over the flat parameter buffer, global-norm gradient clipping and the
 * learning-rate schedules (the update rules are stated in optim.h). Each optimizer is one loop
 * over every element of ps->data / ps->grad, padding included: padding gradients are 0, so
 * padding values stay 0 (AdamW decays 0 to 0; m, v and the update stay 0).
 * Numerics follow PyTorch's single-tensor code (torch 1.13) operation by operation, so the
 * float64 build reproduces torch.optim to the last few ulps: scalars (bias corrections, step
 * size) in double, the element loop in `real`, in PyTorch's order: decay, moments, update.
 * Parameters live on the CPU for now; the loops will move behind the backend table when they
 * do not. The loops are split over the CPU pool (elementwise, so the bits do not depend on
 * the thread count); the clipping norm is a tt_pool_sum over fixed blocks. */
#include "train/optim/optim.h"

#include "tensor/backend.h"
#include "tensor/cpu/pool.h"

#include <math.h>

#define TT_PI 3.14159265358979323846

static void assert_cpu(const tt_params *ps, const char *what)
{
    TT_ASSERT_MSG(ps->device == TT_CPU,
                  "%s: parameters on %s; only CPU parameters are supported for now "
                  "(HINT: run with \"device\": \"cpu\")",
                  what, tt_device_name(ps->device));
}

void tt_optim_init(tt_optim *o, tt_params *ps, const tt_config *c)
{
    assert_cpu(ps, "tt_optim_init");
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

/* torch.optim.AdamW: param.mul_(1 - lr*wd); exp_avg.mul_(b1).add_(g, alpha=1-b1);
 * exp_avg_sq.mul_(b2).addcmul_(g, g, value=1-b2); denom = exp_avg_sq.sqrt() / sqrt(bc2) + eps;
 * param.addcdiv_(exp_avg, denom, value=-lr/bc1). p*(1 - lr*wd) is optim.h's p -= lr*wd*p,
 * rounded as PyTorch rounds it. */
typedef struct adamw_args {
    real *p, *m, *v;
    const real *g;
    real decay, b1, a1, b2, a2, step, bc2_sqrt, eps;
} adamw_args;

static void adamw_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const adamw_args *a = ctx;
    real *p = a->p, *m = a->m, *v = a->v;
    const real *g = a->g;
    for (int64_t i = lo; i < hi; i++) {
        p[i] = p[i] * a->decay;
        m[i] = m[i] * a->b1 + a->a1 * g[i];
        v[i] = v[i] * a->b2 + a->a2 * g[i] * g[i];
        p[i] = p[i] + -a->step * m[i] / (R_SQRT(v[i]) / a->bc2_sqrt + a->eps);
    }
}

static void adamw_step(tt_optim *o, double lr)
{
    double bc1 = 1.0 - pow(o->beta1, (double)o->t);
    double bc2 = 1.0 - pow(o->beta2, (double)o->t);
    adamw_args a = {.p = o->ps->data, .m = o->m, .v = o->v, .g = o->ps->grad,
                    .decay = (real)(1.0 - lr * o->weight_decay), .b1 = (real)o->beta1,
                    .a1 = (real)(1.0 - o->beta1), .b2 = (real)o->beta2,
                    .a2 = (real)(1.0 - o->beta2), .step = (real)(lr / bc1),
                    .bc2_sqrt = (real)sqrt(bc2), .eps = (real)o->eps};
    tt_pool_for(o->ps->numel, 16, 8192, adamw_range, &a);
}

/* torch.optim.SGD (dampening 0, nesterov off): d = g + wd*p (the gradient itself is left
 * unchanged); with momentum, buf = d at the first step, else buf = mu*buf + d, and d = buf;
 * p += -lr*d. */
typedef struct sgd_args {
    real *p, *buf;
    const real *g;
    real wd, mu, neg_lr;
    bool first, use_buf;
} sgd_args;

static void sgd_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const sgd_args *a = ctx;
    for (int64_t i = lo; i < hi; i++) {
        real d = a->g[i];
        if (a->wd != R(0)) d = d + a->wd * a->p[i];
        if (a->use_buf) {
            a->buf[i] = a->first ? d : a->buf[i] * a->mu + d;
            d = a->buf[i];
        }
        a->p[i] = a->p[i] + a->neg_lr * d;
    }
}

static void sgd_step(tt_optim *o, double lr)
{
    sgd_args a = {.p = o->ps->data, .buf = o->m, .g = o->ps->grad,
                  .wd = (real)o->weight_decay, .mu = (real)o->momentum, .neg_lr = (real)-lr,
                  .first = o->t == 1, .use_buf = o->momentum != 0.0};
    tt_pool_for(o->ps->numel, 16, 8192, sgd_range, &a);
}

void tt_optim_step(tt_optim *o, double lr)
{
    TT_ASSERT_MSG(o->ps && o->m && o->v, "tt_optim_step before tt_optim_init");
    assert_cpu(o->ps, "tt_optim_step");
    o->t++;
    switch (o->kind) {
    case TT_OPT_ADAMW: adamw_step(o, lr); break;
    case TT_OPT_SGD: sgd_step(o, lr); break;
    default: TT_ASSERT_MSG(0, "tt_optim_step: unknown optimizer %d", (int)o->kind);
    }
}

static double sum_squares(void *ctx, int64_t lo, int64_t hi)
{
    const real *g = ctx;
    double ss = 0.0;
    for (int64_t i = lo; i < hi; i++) ss += (double)g[i] * (double)g[i];
    return ss;
}

/* n = sqrt(sum g^2) accumulated in double over the whole gradient buffer (padding is 0).
 * PyTorch takes the norm of the per-parameter norms: the same value up to rounding. */
double tt_clip_grad_norm(tt_params *ps, double max_norm)
{
    assert_cpu(ps, "tt_clip_grad_norm");
    TT_ASSERT_MSG(ps->grad || ps->numel == 0, "tt_clip_grad_norm before tt_params_finalize");
    double norm = sqrt(tt_pool_sum(ps->numel, 8192, sum_squares, ps->grad));
    if (max_norm > 0.0 && norm > max_norm) {
        real coef = (real)(max_norm / (norm + 1e-6));
        tt_backend_get(ps->device)->scale_forward(ps->grad, ps->grad, coef, ps->numel);
    }
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
