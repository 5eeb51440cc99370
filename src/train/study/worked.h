/* worked.h: the seed texts' worked examples (the five Korean texts the project was created
 * from), recomputed with the project's own ops. worked_table.c transcribes each example: the
 * seed file, where it is (section, line, a short quote), its inputs and its figures as printed,
 * with their rounding; nothing is read from the seeds at run time. worked.c recomputes each on
 * the CPU backend through the autograd graph (tt_matmul, tt_scale, tt_softmax, tt_sdpa, the
 * sinusoidal table, the attention layer, ...) and judges the seed's figures against the result;
 * worked_report.c writes the table ("The seed texts' worked examples, recomputed"). */
#ifndef TT_WORKED_H
#define TT_WORKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define TT_WORKED_MAX 16 /* figures per example */
#define TT_WORKED_SEED 13 /* the Philox seed of the examples that draw random inputs */

/* What an example computes (inputs `in`, parameters `p`); figures in the order given. */
typedef enum tt_worked_kind {
    TT_WK_SCALE,    /* in * s by tt_scale; s = tt_nn_attn_scale: 1/sqrt(p0) (p0 > 0, else 1) */
    TT_WK_SOFTMAX,  /* tt_softmax(tt_scale(in, s)), s as for TT_WK_SCALE */
    TT_WK_TEMP,     /* in / p0 (tau, by tt_scale), then its softmax: 2 n_in figures */
    TT_WK_QKV,      /* in = Q, K, V [p1 tokens, p2 wide] row-major; p0: 0 Q K^T, 1 that over
                       sqrt(p2), 2..(1 + p1) one row of the weights, p1 + 2 the output W V */
    TT_WK_VARIANCE, /* p1 pairs q, k ~ N(0, I_p0) (tt_study_variance): mean q.k, Var(q.k),
                       mean and Var of q.k / sqrt(p0); tolerances 3 standard errors */
    TT_WK_DROPOUT,  /* tt_dropout(p0) on the softmax of N(0,1) scores [p1 rows, p2 keys]:
                       fraction dropped (tolerance 3 standard errors), kept weight over weight */
    TT_WK_ROWSUM,   /* in = rows of p0 columns: each row's sum, by tt_matmul with ones */
    TT_WK_MHA,      /* tt_nn_mha (p3 heads, PyTorch's initial values) on x ~ N(0,1) [p0, p1,
                       p2]: p1 as a product of two factors p4 x p5 when p4 > 0, then the output's
                       three dims */
    TT_WK_SQRT,     /* sqrt(in[i]) = 1 / tt_nn_attn_scale(sqrt_dk, 1, in[i], 1) */
    TT_WK_HEADS,    /* d_model p0, p1 heads: d_k (from tt_nn_attn_scale), and the QK^T
                       multiply-adds of p1 heads of d_k over those of one head of p0 */
    TT_WK_COST,     /* N = p0: N^2 scores (tt_shape_numel), their float32 bytes / p1 */
    TT_WK_SQUARES,  /* in[i]^2 (tt_shape_numel); one more figure when n > n_in: last / first */
    TT_WK_MATMUL,   /* x [p0, p1] times W [p1, p2] by tt_matmul: the product's two dims */
    TT_WK_PAD,      /* one query against keys with scores `in`, the last key padding: weights
                       of softmax(in + [0.., -1e9]) (tt_add, tt_softmax), then of tt_sdpa with
                       its own padding mask */
    TT_WK_CAUSAL,   /* tt_sdpa, causal, p0 tokens, equal scores: zero weights above the diagonal
                       (j > i), zero weights on or below it, the largest weight above it */
    TT_WK_SHAPES,   /* [p0 batch, p1 tokens]: Q, K [.., p2], V [.., p3]; the dims of scores,
                       scaled scores, masked scores (tt_add of a causal -inf mask), weights,
                       output: 15 figures */
    TT_WK_POSENC,   /* tt_nn_posenc_forward (sinusoidal) on zeros [1, p0 positions, p1]: the
                       table's rows, p0 * p1 figures */
    TT_WK_RANGES,   /* min of tt_relu(in), tt_relu(in[last]), tanh(in[last]) and
                       tanh(-in[last]) as softmax([x, -x])_0 - softmax([x, -x])_1 */
    TT_WK_CROSS,    /* Q [p0, p2], K [p1, p2], V [p1, p3] ~ N(0,1): weights' dims, output's
                       dims, and the p0 row sums of the weights */
    TT_WK_HEADS4,   /* Q, K, V [p0 batch, p1 heads, p2 tokens, p3] through batched tt_matmul
                       and tt_softmax: the output's 4 dims, and d_k of tt_nn_attn_scale for
                       d_model p1 * p3 and p1 heads */
} tt_worked_kind;

typedef struct tt_worked_example {
    const char *id;        /* "000-tau-1": seed file number, then a short name */
    const char *file;      /* the seed file */
    const char *where;     /* section, line, and a short quote */
    const char *what;      /* the computation, in words */
    const char *seed_text; /* the seed's figure as printed */
    tt_worked_kind kind;
    const double *in; /* inputs, n_in values (NULL when none) */
    int n_in;
    double p[6];
    int n;                      /* figures */
    double seed[TT_WORKED_MAX]; /* the seed's figures as numbers; NAN where it gives none */
    double unit;                /* the seed's rounding: agree when |got - seed| <= unit / 2 */
    const double *units;        /* per figure, overriding unit; NULL for none */
    int digits;                 /* decimals shown for computed figures that are not integers */
    const char *note;           /* what is wrong with the seed, or a remark; NULL for none */
} tt_worked_example;

extern const tt_worked_example tt_worked_examples[];
extern const int tt_worked_count;
/* The seeds' figures that are not recomputed, each with the reason. */
extern const char *const tt_worked_skipped[];
extern const int tt_worked_n_skipped;

typedef enum tt_worked_verdict {
    TT_WORKED_AGREE,   /* every figure the seed gives agrees to its rounding */
    TT_WORKED_DIFFERS, /* at least one does not */
    TT_WORKED_ONLY,    /* the seed gives no figure (a formula or a question): computed only */
} tt_worked_verdict;

typedef struct tt_worked_result {
    double got[TT_WORKED_MAX];
    double tol[TT_WORKED_MAX]; /* the accepted |got - seed| */
    double xcheck;             /* TT_WK_QKV, TT_WK_PAD: largest |fused tt_sdpa - composed ops|;
                                  NAN for the other kinds */
    tt_worked_verdict verdict;
    int n_bad; /* figures that differ */
} tt_worked_result;

/* The example with this id, or NULL. */
const tt_worked_example *tt_worked_find(const char *id);
/* Recomputes e into r (tolerances, then the verdict by tt_worked_judge). Allocates and frees
 * its own arenas on the CPU; aborts on a malformed example (a bug in the table). */
void tt_worked_compute(const tt_worked_example *e, tt_worked_result *r);
/* |got - seed| <= tol, with a relative 1e-9 of slack for ties printed in decimal. */
bool tt_worked_figure_agrees(double seed, double got, double tol);
/* r->verdict and r->n_bad from e's seed figures and r's got and tol. */
void tt_worked_judge(const tt_worked_example *e, tt_worked_result *r);

/* Every example in table order: res holds tt_worked_count results. */
void tt_worked_compute_all(tt_worked_result *res);

/* worked_report.c. The section "The seed texts' worked examples, recomputed" from
 * results already computed (res: tt_worked_count entries): the seed figures found wrong, a
 * markdown table with a row per example, then what is not recomputed; headed with `heading`
 * ("##" inside report.md, "#" alone). false when a write failed. */
bool tt_worked_write_section(FILE *f, const char *heading, const tt_worked_result *res);
/* dir/worked_examples.md: the section alone, written atomically. 0, or -1 with err. */
int tt_worked_write_file(const char *dir, const tt_worked_result *res, char *err,
                         size_t errlen);
/* Recomputes every example, appends the section to f (the caller's atomic close checks f's
 * writes), and with dir also writes dir/worked_examples.md. 0, or -1 with err. */
int tt_worked_write_report(FILE *f, const char *dir, char *err, size_t errlen);

#endif
