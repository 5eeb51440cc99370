/* optim.h: optimizers over a tt_params table (one loop over the flat buffers), learning-rate
 * schedules and global-norm gradient clipping, with PyTorch's exact update rules:
 *   AdamW (torch.optim.AdamW, amsgrad off): t += 1; p -= lr*wd*p; m = b1 m + (1-b1) g;
 *     v = b2 v + (1-b2) g^2; p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 *   SGD (torch.optim.SGD, dampening 0, nesterov off): g += wd*p; buf = g at t = 1, else
 *     buf = mu buf + g; p -= lr * buf   (mu = 0: p -= lr * g)
 *   clipping (torch.nn.utils.clip_grad_norm_): n = ||g||_2 over every gradient;
 *     if max > 0 and n > max: g *= max / (n + 1e-6)
 * State (moments, step count) lives in buffers of the table's layout, so a checkpoint saves it
 * by parameter name. */
#ifndef TT_OPTIM_H
#define TT_OPTIM_H

#include "autograd/params.h"
#include "train/config/config.h"

typedef struct tt_optim {
    tt_optimizer kind;
    double lr, beta1, beta2, eps, weight_decay, momentum;
    int64_t t;     /* optimizer steps taken */
    real *m, *v;   /* adamw: first and second moments; sgd: m = momentum buffer, v unused */
    tt_params *ps; /* not owned */
} tt_optim;

/* Moments zeroed, t = 0; hyper-parameters from c->train. */
void tt_optim_init(tt_optim *o, tt_params *ps, const tt_config *c);
/* One update of every parameter with its gradient, at learning rate lr (the schedule's).
 * gate (device memory, or NULL): the step's loss; when it is not finite the device changes
 * nothing (t still counts the step: a caller that goes on takes it back). */
void tt_optim_step(tt_optim *o, double lr, const real *gate);
void tt_optim_free(tt_optim *o);

/* Global 2-norm of every gradient before clipping (the value to log) into norm, a double in
 * the device's memory (no host read: a step's); clips in place when max_norm > 0 and the norm
 * exceeds it. */
void tt_clip_grads(tt_params *ps, double max_norm, double *norm);
/* The same, the norm returned to the host (outside steps: it allocates and synchronises). */
double tt_clip_grad_norm(tt_params *ps, double max_norm);

/* Learning rate for optimizer step k (0-based) of `total`: linear warm-up lr*(k+1)/warmup over
 * the first `warmup` steps, then constant, linear decay to 0, or cosine decay to 0 at `total`:
 * with f = (k - warmup) / max(1, total - warmup), linear lr*(1-f), cosine lr*0.5*(1+cos(pi f)). */
double tt_schedule_lr(tt_schedule s, double lr, int64_t k, int64_t warmup, int64_t total);

#endif
