/* gradcheck.c: central differences against the tape (see gradcheck.h). Device memory is
 * reached only through the backend: outputs and gradients are copied to the host, and each
 * perturbed element is written with from_host. */
#include "autograd/gradcheck.h"
#include "autograd/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gc_state {
    tt_graph *g;
    tt_gradcheck_fn f;
    void *ctx;
    tt_var **inputs;
    tt_rng rng0;
    const real *R;
    real *y; /* host copy of the output */
} gc_state;

/* One fresh evaluation of f from the same rng state. */
static tt_var *evaluate(gc_state *s)
{
    tt_graph_reset(s->g);
    if (s->g->rng) *s->g->rng = s->rng0;
    return s->f(s->g, s->inputs, s->ctx);
}

/* sum(f(x) * R), computed on the host in double, without recording */
static double loss_at(gc_state *s)
{
    bool old = tt_graph_set_no_grad(s->g, true);
    tt_var *out = evaluate(s);
    tt_graph_set_no_grad(s->g, old);
    s->g->be->to_host(s->y, out->val.data, tt_tensor_bytes(&out->val));
    const real *y = s->y;
    double l = 0.0;
    for (int64_t k = 0; k < out->val.n; k++) l += (double)y[k] * (double)s->R[k];
    return l;
}

bool tt_gradcheck(tt_graph *g, tt_gradcheck_fn f, void *ctx, tt_var **inputs, int n_inputs,
                  tt_gradcheck_opts opts, tt_gradcheck_report *rep)
{
    gc_state s = {.g = g, .f = f, .ctx = ctx, .inputs = inputs};
    if (g->rng) s.rng0 = *g->rng;
    *rep = (tt_gradcheck_report){.worst_input = -1, .worst_index = -1};

    /* R has the output's shape; it lives on the host for the whole check. */
    tt_var *out = evaluate(&s);
    int64_t n_out = out->val.n;
    real *R = tt_xmalloc((size_t)n_out * sizeof(real));
    tt_rng rr;
    tt_rng_init(&rr, opts.seed, 99);
    tt_rng_normal(&rr, R, n_out, R(0), R(1));
    s.R = R;
    s.y = tt_xmalloc((size_t)n_out * sizeof(real));

    /* analytic: backward of sum(out * R) */
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i]->requires_grad)
            g->be->zero(inputs[i]->grad.data, tt_tensor_bytes(&inputs[i]->grad));
    out = evaluate(&s);
    TT_ASSERT_MSG(out->requires_grad, "gradcheck: the output does not depend on any input that "
                  "requires grad");
    tt_var *rv = tt_var_from_host(g, out->val.shape, TT_REAL, R, false);
    tt_backward(g, tt_sum(g, tt_mul(g, out, rv)));

    double base1 = loss_at(&s), base2 = loss_at(&s);
    bool ok = base1 == base2;
    if (!ok)
        snprintf(rep->message, sizeof rep->message, "f is not deterministic: loss %.17g then "
                 "%.17g for the same inputs", base1, base2);

    double worst_excess = -(double)INFINITY;
    for (int i = 0; ok && i < n_inputs; i++) {
        tt_var *x = inputs[i];
        if (!x->requires_grad) continue;
        real *xv = x->val.data, *ga = tt_tensor_host_copy(g->be, &x->grad);
        for (int64_t j = 0; j < x->val.n; j++) {
            real keep, v;
            g->be->to_host(&keep, xv + j, sizeof keep);
            v = keep + (real)opts.eps;
            g->be->from_host(xv + j, &v, sizeof v);
            double lp = loss_at(&s);
            v = keep - (real)opts.eps;
            g->be->from_host(xv + j, &v, sizeof v);
            double lm = loss_at(&s);
            g->be->from_host(xv + j, &keep, sizeof keep);
            double numeric = (lp - lm) / (2.0 * opts.eps);
            double analytic = (double)ga[j];
            double err = fabs(analytic - numeric);
            double excess = err - (opts.atol + opts.rtol * fabs(numeric));
            rep->checked++;
            if (err > rep->max_abs_err) rep->max_abs_err = err;
            if (excess > 0) rep->failed++;
            if (excess > worst_excess) {
                worst_excess = excess;
                rep->worst_input = i;
                rep->worst_index = j;
                rep->worst_analytic = analytic;
                rep->worst_numeric = numeric;
            }
        }
        free(ga);
    }
    if (ok && rep->failed)
        snprintf(rep->message, sizeof rep->message, "%lld of %lld gradients wrong; worst: input "
                 "%d element %lld analytic %.10g numeric %.10g", (long long)rep->failed,
                 (long long)rep->checked, rep->worst_input, (long long)rep->worst_index,
                 rep->worst_analytic, rep->worst_numeric);
    free(R);
    free(s.y);
    tt_graph_reset(g);
    if (g->rng) *g->rng = s.rng0;
    return ok && rep->failed == 0;
}
