/* gradcheck.h: finite-difference gradient checking (PyTorch's gradcheck, in C).
 *
 * For a function f of leaf inputs, with loss = sum(f(x) * R) for a fixed random R, compares the
 * tape's gradient of every input element with the central difference
 * (loss(x + eps) - loss(x - eps)) / (2 eps), and requires |analytic - numeric| <= atol + rtol *
 * |numeric| everywhere. Meaningful in the float64 build (eps 1e-6); the graph's rng is restored
 * before every evaluation so dropout masks are the same each time. Any device: values are
 * read and perturbed through the graph's backend. */
#ifndef TT_GRADCHECK_H
#define TT_GRADCHECK_H

#include "autograd/graph.h"

/* Builds f on g from the inputs; must be deterministic given g->rng. */
typedef tt_var *(*tt_gradcheck_fn)(tt_graph *g, tt_var **inputs, void *ctx);

typedef struct tt_gradcheck_opts {
    double eps, atol, rtol;
    uint64_t seed; /* for R */
} tt_gradcheck_opts;

#define TT_GRADCHECK_DEFAULTS ((tt_gradcheck_opts){.eps = 1e-6, .atol = 1e-5, .rtol = 1e-3, .seed = 7})

typedef struct tt_gradcheck_report {
    int64_t checked, failed;
    double max_abs_err;
    /* the element that exceeded its tolerance the most (or came closest) */
    int worst_input;
    int64_t worst_index;
    double worst_analytic, worst_numeric;
    char message[256];
} tt_gradcheck_report;

/* Inputs are leaf vars with caller-owned value and gradient buffers on g's device (requires_grad
 * set on the ones to check). Returns true when every element passes. */
bool tt_gradcheck(tt_graph *g, tt_gradcheck_fn f, void *ctx, tt_var **inputs, int n_inputs,
                  tt_gradcheck_opts opts, tt_gradcheck_report *rep);

#endif
