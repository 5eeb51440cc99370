/* study.h: the measurements behind the 1/sqrt(d_k) scaling study, every number computed with the
 * project's own kernels and autograd (tt_matmul, tt_scale, tt_softmax, tt_sdpa), statistics
 * accumulated in double. Random inputs come from Philox (tt_rng_normal) with one stream per
 * (part, d_k), so a d_k's numbers do not depend on which other d_k are measured, and the scaled
 * and unscaled variants of a part see the same draws. Each call allocates one CPU arena pair
 * sized for its largest d_k, resets it between d_k values and frees it before returning.
 * study.c runs the whole study, training.c its trainings (a client of the run API: it trains
 * models through it); study_report.c turns the results into report.md and plots. */
#ifndef TT_STUDY_H
#define TT_STUDY_H

#include "train/run/run.h"

#include <stddef.h>
#include <stdint.h>

#define TT_STUDY_MAX_DK 8

typedef struct tt_study_opts {
    int n_dk;                /* entries used in dk, 1..TT_STUDY_MAX_DK */
    int dk[TT_STUDY_MAX_DK]; /* key widths measured */
    int samples;             /* part 1: (q, k) pairs per d_k; parts 2-3: samples / T rows */
    int T;                   /* keys per query row (parts 2-3) */
    uint64_t seed;
    tt_device device; /* where the measurements run (values staged through the backend) */
} tt_study_opts;

/* dk {4, 16, 64, 256, 1024}, samples 10000, T 16, on the CPU */
tt_study_opts tt_study_defaults(uint64_t seed);

/* Query rows of parts 2 and 3: max(samples / T, 200). */
int tt_study_rows(const tt_study_opts *o);
/* Batch of part 3 at width dk: rows for dk <= 64, then rows * 64 / dk (at least 8), so every
 * d_k past 64 costs the multiply-adds and memory of d_k = 64 (dk 1024 would otherwise need
 * over 1 GiB in the float64 build); dscores keeps >= 8 T^2 elements per d_k. */
int tt_study_grad_batch(const tt_study_opts *o, int dk);

/* The host memory parts 1-3 take at most (one part at a time): the largest arena and as much
 * again for what is drawn on the host and the outputs copied back, and the tape. */
double tt_study_measure_bytes(const tt_study_opts *o);

/* 1. q, k with i.i.d. N(0,1) components, `samples` pairs per d_k; q.k by a batched tt_matmul
 * ([samples,1,dk] x [samples,1,dk]^T), scaled by 1/sqrt(dk) with tt_scale; the sample variance
 * (mean subtracted, divisor samples - 1) of both, and the unscaled mean. Theory: d_k and 1. */
typedef struct tt_study_var {
    int dk;
    double var_unscaled, var_scaled, mean_unscaled;
} tt_study_var;
void tt_study_variance(const tt_study_opts *o, tt_study_var *out /* n_dk */);

/* 2. Softmax saturation: tt_study_rows(o) query rows, each against T keys of its own (all N(0,1)
 * components); scores q.K^T by tt_matmul, softmax(scores) [0] and softmax(tt_scale(scores,
 * 1/sqrt(dk))) [1] by tt_softmax; the mean over rows of the largest weight and of the entropy
 * -sum w log w (natural log; 0 log 0 = 0). A uniform row has max 1/T and entropy log T. */
typedef struct tt_study_sat {
    int dk;
    double max_w[2], entropy[2]; /* [0] unscaled, [1] scaled */
} tt_study_sat;
void tt_study_saturation(const tt_study_opts *o, tt_study_sat *out /* n_dk */);

/* 3. Gradients through attention: Q, K, V [B,T,dk] (B = tt_study_grad_batch) with N(0,1)
 * components, loss = sum(out * R) with R fixed, R ~ N(0, 1/dk): dL/d(weights) = R V^T then has
 * unit variance at every d_k (with N(0,1) it would grow as sqrt(dk) and hide the softmax's own
 * d_k dependence). dq and dkey come from the fused tt_sdpa's backward (scale 1 [0] or
 * 1/sqrt(dk) [1]); dscores is the gradient of the softmax's input on the composed path
 * (matmul, tt_scale, softmax, matmul), run in the same graph on the same data (the two paths
 * agree: tests/test_attention.c). Each is the RMS per element over the whole tensor. */
typedef struct tt_study_grad {
    int dk;
    double dscores[2], dq[2], dkey[2]; /* [0] unscaled, [1] scaled */
    /* Median over query rows of each row's dscores RMS. Unscaled, the RMS above falls only
     * as ~d_k^-1/4: it is carried by the few rows whose top two scores nearly tie (a gap
     * below ~1, probability ~1/sqrt(d_k)); the typical row's gradient vanishes exponentially. */
    double dscores_med[2];
} tt_study_grad;
void tt_study_gradients(const tt_study_opts *o, tt_study_grad *out /* n_dk */);

/* 5a. Temperature: softmax(scores / tau) through tt_scale and tt_softmax, for each of the n_tau
 * temperatures (> 0): out[i * n + j] is weight j at taus[i]. */
void tt_study_temperature(const double *scores, int n, const double *taus, int n_tau,
                          double *out /* n_tau * n */);

/* CSV: a header line, then one row per d_k (%.6g). Written to PATH.tmp.XXXXXX and renamed over
 * PATH, so a reader never sees half a file. 0, or -1 with a message naming the path in err.
 *   var:  dk,var_unscaled,var_scaled,mean_unscaled
 *   sat:  dk,max_w_unscaled,max_w_scaled,entropy_unscaled,entropy_scaled
 *   grad: dk,dscores_unscaled,dscores_scaled,dq_unscaled,dq_scaled,dkey_unscaled,dkey_scaled,
 *         dscores_med_unscaled,dscores_med_scaled */
int tt_study_write_csv_var(const char *path, const tt_study_var *v, int n, char *err,
                           size_t errlen);
int tt_study_write_csv_sat(const char *path, const tt_study_sat *s, int n, char *err,
                           size_t errlen);
int tt_study_write_csv_grad(const char *path, const tt_study_grad *gr, int n, char *err,
                            size_t errlen);

/* 4. Each of the config's study.seeds seeds trains the config's model at study.d_model /
 * study.n_heads twice, attn_scale "sqrt_dk" and "none", from the same initial values and batch
 * order (seed = config seed + s). Each training sees the first TT_STUDY_TRAIN_EXAMPLES examples
 * of the training split (all of them when it is smaller): fewer steps per epoch, so that
 * 2 x seeds trainings keep the study near a minute on two cores. What one training records: */
/* Before the study writes anything: -1 with err (exit 2: "memory: this run needs ...", naming
 * study.samples and study.d_model) when the config's own run, one of the study's trainings and
 * its measurements do not fit the memory budget.h's check allows, else 0. */
int tt_study_check_memory(const tt_config *c, const tt_corpus *d, char *err, size_t errlen);
#define TT_STUDY_MAX_EPOCHS 64
#define TT_STUDY_TRAIN_EXAMPLES 2000
enum { TT_STUDY_Q, TT_STUDY_K, TT_STUDY_V };
typedef struct tt_study_trace {
    const char *name; /* "sqrt_dk" | "none" */
    int64_t seed;
    int n_train; /* training examples seen per epoch */
    int n_steps, cap;
    /* per optimizer step: the step, its loss, the gradient norm of the q, k and v projections
     * (grad[TT_STUDY_Q..V]: the row block [0,d), [d,2d) or [2d,3d) of every layer's
     * in_proj_weight and the same block of in_proj_bias, as one vector over all layers: the
     * square root of the layers' summed squares), and attn_grad, all three as one vector */
    double *step, *loss, *grad[3], *attn_grad;
    int n_epochs; /* evaluations: epoch 0 (before training) to study.epochs */
    double epoch[TT_STUDY_MAX_EPOCHS + 1], valid_acc[TT_STUDY_MAX_EPOCHS + 1];
    double valid_loss[TT_STUDY_MAX_EPOCHS + 1];
    double entropy[TT_STUDY_MAX_EPOCHS + 1]; /* mean over heads and layers */
} tt_study_trace;

/* 5b. The trained scaled model's maps at one temperature. */
typedef struct tt_study_temp {
    double tau, max_w, entropy, valid_acc;
} tt_study_temp;

/* Everything the report shows. */
typedef struct tt_study_results {
    tt_study_opts o;
    tt_study_var var[TT_STUDY_MAX_DK];
    tt_study_sat sat[TT_STUDY_MAX_DK];
    tt_study_grad gr[TT_STUDY_MAX_DK];
    double soft[9]; /* 5a: softmax([2, 1, 0.5] / tau), tau 0.5, 1, 2 */
    int n_seeds;
    tt_study_trace *t; /* 4: 2 * n_seeds, t[2 s] "sqrt_dk" and t[2 s + 1] "none" of seed s */
    /* 4: the mean row entropy the validation set's real query rows would have if each were
     * uniform over the keys it sees (its sentence's real tokens; causal: those up to it) */
    double valid_uniform;
    tt_study_temp temps[3]; /* 5b: tau 0.5, 1, 2, the first seed's scaled model */
    double probe_uniform;   /* 5b: the same reference over the probes' rows */
} tt_study_results;

/* training.c: training s (0-based) of variant `scaled` into t (its arrays allocated here, freed
 * by tt_study_trace_free), into the folder RUN/train_<name> for s = 0 (metrics, checkpoint,
 * loss.svg and attention maps) and RUN/train_<name>_seed<seed> otherwise (no attention maps).
 * With n_temps > 0, part 5b on the trained model: temps[i].tau set by the caller, the rest
 * filled, and RUN/temperature_<tau>.svg written. valid_uniform and probe_uniform (may be NULL)
 * get the uniform references above. 0, or -1 with err. */
int tt_study_train(tt_run *parent, int s, bool scaled, tt_study_trace *t, tt_study_temp *temps,
                   int n_temps, double *valid_uniform, double *probe_uniform, char *err,
                   size_t errlen);
void tt_study_trace_free(tt_study_trace *t);
/* RUN/attn_grad_norms.csv: seed,variant,step,loss,grad_q,grad_k,grad_v, one row per step of
 * each of the n traces, written atomically; 0, or -1 with err. */
int tt_study_write_csv_grad_norms(const char *path, const tt_study_trace *t, int n, char *err,
                                  size_t errlen);

/* study.c: configs/scaling.json's study instead of training, into r->cfg.output.dir; the
 * run r gives the config and data, and is not trained itself. 0, or -1 with err. */
int tt_study_main(tt_run *r, char *err, size_t errlen);
/* study_report.c: RUN/report.md, after the SVG plots of every part (study_plots.c). */
int tt_study_write_report(const tt_config *c, const tt_study_results *s, char *err,
                          size_t errlen);
int tt_study_write_plots(const tt_config *c, const tt_study_results *s, char *err,
                         size_t errlen);
/* The mean, smallest and largest of v[0..n): part 4's spread over seeds. */
typedef struct tt_spread {
    double mean, lo, hi;
} tt_spread;
tt_spread tt_spread_of(const double *v, int n);

#endif
