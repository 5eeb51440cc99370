/* test_cuda.c: every slot of the CUDA table against the CPU's (make CUDA=1 only; the suite
 * runs without fork, since CUDA is undefined after fork: check_main.c).
 * A slot's arguments are listed once, with their roles and lengths (slot tables below). A case
 * draws random contents for them at odd sizes (not multiples of 4, 8 or 32), runs the CPU
 * kernel on host copies and the CUDA kernel on device copies (alloc, from_host, to_host back),
 * and compares every buffer the kernel may write: reals within 1e-5 (float32) or 1e-12
 * (float64) of each element and of the tensor's largest value (a gradient's: of the largest
 * value added to it); dropout keep masks, copies and fills bit for bit. Outputs start as junk,
 * gradients as the same random prefill on both sides, so a kernel that writes instead of
 * adding fails. Reductions also run twice on the device and must give the same bits. Without
 * a usable device every test passes after one line "SKIP: no CUDA device (...)". */
#ifdef TT_WITH_CUDA

#include "kernel_ref.h"

#include "tensor/cuda/cuda.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TT_DOUBLE
#define CU_TOL 1e-12
#else
#define CU_TOL 1e-5
#endif

static const tt_backend *const cpu = &tt_cpu_backend, *const gpu = &tt_cuda_backend;

/* the tolerance compare() holds reals to: CU_TOL, but for attention's TF32 products */
static double tol = CU_TOL;

/* Whether the device can run here: asked once, and its absence said once. */
static bool have_gpu(void)
{
    static int state; /* 0 not asked yet, 1 usable, -1 none */
    if (!state) {
        char err[512] = "";
        state = gpu->available(err, sizeof err) == 0 ? 1 : -1;
        if (state < 0) printf("SKIP: no CUDA device (%s)\n", err);
        fflush(stdout);
    }
    return state > 0;
}

#define NEED_GPU()                                                                                 \
    do {                                                                                           \
        if (!have_gpu()) return;                                                                   \
    } while (0)

/* ---- slots and cases ----------------------------------------------------------------------- */

/* An argument's role. IN: read only; OUT: written (starts as junk); GRAD: added into (starts
 * as a prefill); DROP: an OUT whose zeros (dropped elements) must match exactly; EXACT:
 * compared bit for bit; SCRATCH: attention scratch of each device's own size; NONE: NULL. */
typedef enum { END, IN, OUT, GRAD, DROP, EXACT, SCRATCH, NONE } role;
/* its length, from the case's sizes: 1, n, N, C, N*C, V*C, N*V, or x[0..3] */
typedef enum { ONE, SN, SR, SC, SNC, SVC, SNV, X0, X1, X2, X3 } extent;
typedef enum { F, U8, I32 } etype;
static const size_t ESIZE[] = {sizeof(real), sizeof(uint8_t), sizeof(int32_t)};

enum { MAX_ARGS = 10 };
typedef struct kcase kcase;
/* Calls the slot on d; p[i] is argument i (NULL for NONE). Returns what the slot returns
 * (sum_squares), else 0. */
typedef double (*kcall)(const tt_backend *d, const kcase *c, void *const *p);

typedef struct slot {
    const char *name;
    kcall call;
    struct {
        const char *name;
        role role;
        extent len;
        etype type;
    } arg[MAX_ARGS];
} slot;

typedef struct arg {
    const char *name;
    role role;
    etype type;
    int64_t n;
    void *init, *want; /* the contents both sides start from; the CPU's result */
} arg;

struct kcase {
    /* sizes and scalars, set before kc_new */
    int64_t n, N, x[4];
    int C, V, sub, batch;
    real s, p;
    bool acc, packed, bwd;
    tt_rng at;
    tt_attn_desc attn;
    tt_gemm_op op[2]; /* the call fills in the pointers */
    int64_t stride[3];
    tt_adamw_scalars adamw;
    tt_sgd_scalars sgd;
    /* made by kc_new */
    kcall call;
    char desc[192];
    int nargs;
    arg a[MAX_ARGS];
};

static size_t arg_bytes(const arg *x) { return (size_t)x->n * ESIZE[x->type]; }

static int64_t length(const kcase *c, extent e)
{
    const int64_t len[] = {1, c->n, c->N, c->C, c->N * c->C, (int64_t)c->V * c->C,
                           c->N * c->V};
    return e >= X0 ? c->x[e - X0] : len[e];
}

static void append(kcase *c, const char *fmt, ...) TT_PRINTF(2, 3);
static void append(kcase *c, const char *fmt, ...)
{
    size_t len = strlen(c->desc);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->desc + len, sizeof c->desc - len, fmt, ap);
    va_end(ap);
}

static uint64_t next_seed = 1;

/* Contents for a role: reals N(0,1) for IN and GRAD, else junk in [-9, 9); bytes 0/1 for IN,
 * else 7; int32 tokens in [0, V) with a repeat (random_tokens), or zeros when V is 0. */
static void *draw(const kcase *c, role r, etype t, int64_t n)
{
    void *x = tt_xcalloc(n ? (size_t)n : 1, ESIZE[t]);
    uint64_t seed = next_seed++;
    if (t == F && (r == IN || r == GRAD))
        tt_test_normal(x, n, seed);
    else if (t == F)
        tt_test_uniform(x, n, seed, R(-9), R(9));
    else if (t == U8) {
        real *u = randu(n, seed, 0, 1);
        for (int64_t i = 0; i < n; i++) ((uint8_t *)x)[i] = r == IN ? u[i] >= R(0.5) : 7;
        free(u);
    } else if (c->V > 0) {
        int32_t *tok = random_tokens(n, c->V, seed);
        memcpy(x, tok, (size_t)n * sizeof *tok);
        free(tok);
    }
    return x;
}

/* A case of slot s at the sizes already in c: arguments drawn, those whose bit is set in
 * `nulls` NULL; described by the slot's name, the sizes, the note (NULL for none; label()
 * formats one) and the NULL arguments. */
static void kc_new(kcase *c, const slot *s, int nulls, const char *note)
{
    c->call = s->call;
    c->nargs = 0;
    snprintf(c->desc, sizeof c->desc, "%s", s->name);
    if (c->n) append(c, " n=%lld", (long long)c->n);
    if (c->N) append(c, " N=%lld", (long long)c->N);
    if (c->C) append(c, " C=%d", c->C);
    if (c->V) append(c, " V=%d", c->V);
    if (note) append(c, "%s", note);
    for (int i = 0; i < MAX_ARGS && s->arg[i].role != END; i++) {
        bool null = nulls & (1 << i);
        role r = null ? NONE : s->arg[i].role;
        int64_t n = null ? 0 : length(c, s->arg[i].len);
        c->a[c->nargs++] = (arg){.name = s->arg[i].name, .role = r, .type = s->arg[i].type,
                                 .n = n, .init = r == NONE || r == SCRATCH ? NULL :
                                                 draw(c, r, s->arg[i].type, n)};
        if (null) append(c, ", %s NULL", s->arg[i].name);
    }
}

/* Argument i of c starts as argument j of src after its run: the CPU's result, or its input
 * (the same on both sides). */
static void kc_copy(kcase *c, int i, const kcase *src, int j)
{
    const arg *x = &src->a[j];
    ck_assert_msg(c->a[i].n == x->n && c->a[i].type == x->type, "%s: %s from %s", c->desc,
                  c->a[i].name, x->name);
    if (x->n) memcpy(c->a[i].init, x->want ? x->want : x->init, arg_bytes(x));
}

/* One run on d: buffers of d from the initial contents, the call, and host copies of
 * everything it may write in out[i] (NULL for the rest). Frees every buffer it allocated. */
static double run_on(const tt_backend *d, const kcase *c, void *out[MAX_ARGS])
{
    void *p[MAX_ARGS] = {0};
    size_t bytes[MAX_ARGS] = {0};
    for (int i = 0; i < c->nargs; i++) {
        const arg *x = &c->a[i];
        if (x->role == NONE) continue;
        bytes[i] = x->role == SCRATCH ? d->attention_scratch(&c->attn, c->bwd) : arg_bytes(x);
        p[i] = d->alloc(bytes[i]);
        if (x->role != SCRATCH) d->from_host(p[i], x->init, bytes[i]);
    }
    double ret = c->call(d, c, p);
    /* every output read before any free: cudaFree waits for every stream, a read only for the
     * backend's own, so work a slot left on another stream shows as a stale output */
    for (int i = 0; i < c->nargs; i++) {
        role r = c->a[i].role;
        out[i] = NULL;
        if (r != IN && r != NONE && r != SCRATCH) {
            out[i] = tt_xmalloc(bytes[i] ? bytes[i] : 1);
            d->to_host(out[i], p[i], bytes[i]);
        }
    }
    for (int i = 0; i < c->nargs; i++)
        if (p[i]) d->free(p[i]);
    return ret;
}

static void compare(const kcase *c, const arg *x, const void *got, const void *want)
{
    const char *what = label("%s: %s", c->desc, x->name);
    if (x->type != F || x->role == EXACT) {
        const uint8_t *g = got, *w = want;
        size_t bytes = arg_bytes(x), i = 0;
        while (i < bytes && g[i] == w[i]) i++;
        ck_assert_msg(i == bytes, "%s: element %zu differs from the CPU's bits", what,
                      i / ESIZE[x->type]);
        return;
    }
    const real *g = got, *w = want, *init = x->init;
    double scale = 0;
    for (int64_t i = 0; i < x->n; i++) {
        double m = x->role == GRAD ? fabs((double)w[i] - (double)init[i]) : fabs((double)w[i]);
        scale = m > scale ? m : scale;
    }
    ck_assert_close(what, g, w, x->n, tol * scale, tol);
    if (x->role == DROP)
        for (int64_t i = 0; i < x->n; i++)
            ck_assert_msg((g[i] == R(0)) == (w[i] == R(0)),
                          "%s: element %lld is %g here, %g on the CPU", what, (long long)i,
                          (double)g[i], (double)w[i]);
}

/* The case on the CPU (its results kept in want) and on the GPU, compared. */
static void kc_check(kcase *c)
{
    void *want[MAX_ARGS], *got[MAX_ARGS];
    double rw = run_on(cpu, c, want), rg = run_on(gpu, c, got);
    ck_assert_msg(fabs(rg - rw) <= 1e-12 * fabs(rw), "%s: returned %.17g, the CPU %.17g",
                  c->desc, rg, rw);
    for (int i = 0; i < c->nargs; i++) {
        c->a[i].want = want[i];
        if (got[i]) compare(c, &c->a[i], got[i], want[i]);
        free(got[i]);
    }
}

static void kc_free(kcase *c)
{
    for (int i = 0; i < c->nargs; i++) {
        free(c->a[i].init);
        free(c->a[i].want);
    }
    c->nargs = 0;
}

static void kc_run(kcase *c)
{
    kc_check(c);
    kc_free(c);
}

/* The case twice on the GPU: the same bits in everything written and returned. */
static void kc_run_twice(kcase *c)
{
    void *r1[MAX_ARGS], *r2[MAX_ARGS];
    double a = run_on(gpu, c, r1), b = run_on(gpu, c, r2);
    ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "%s: returned %.17g, then %.17g", c->desc, a,
                  b);
    for (int i = 0; i < c->nargs; i++) {
        if (r1[i])
            ck_assert_msg(memcmp(r1[i], r2[i], arg_bytes(&c->a[i])) == 0,
                          "%s: %s differs between two runs on the device", c->desc,
                          c->a[i].name);
        free(r1[i]);
        free(r2[i]);
    }
    kc_free(c);
}

/* ---- the slots ----------------------------------------------------------------------------- */

/* SLOT(NAME, "name", call, arguments...): a slot's call on d (arguments p[i], sizes and
 * scalars from c) and its arguments in order: name, role, length, element type. */
#define SLOT(var, name, call, ...)                                                                 \
    static double var##_call(const tt_backend *d, const kcase *c, void *const *p)                 \
    {                                                                                              \
        (void)c;                                                                                   \
        call;                                                                                      \
        return 0;                                                                                  \
    }                                                                                              \
    static const slot var = {name, var##_call, {__VA_ARGS__}};

SLOT(ADD, "add_forward", d->add_forward(p[0], p[1], p[2], c->n), {"out", OUT, SN, F},
     {"a", IN, SN, F}, {"b", IN, SN, F})
SLOT(MUL, "mul_forward", d->mul_forward(p[0], p[1], p[2], c->n), {"out", OUT, SN, F},
     {"a", IN, SN, F}, {"b", IN, SN, F})
SLOT(SCALE, "scale_forward", d->scale_forward(p[0], p[1], c->s, c->n), {"out", OUT, SN, F},
     {"inp", IN, SN, F})
SLOT(AXPY, "axpy", d->axpy(p[0], c->s, p[1], c->n), {"y", GRAD, SN, F}, {"x", IN, SN, F})
SLOT(RELU, "relu_forward", d->relu_forward(p[0], p[1], c->n), {"out", OUT, SN, F},
     {"inp", IN, SN, F})
SLOT(GELU, "gelu_forward", d->gelu_forward(p[0], p[1], c->n), {"out", OUT, SN, F},
     {"inp", IN, SN, F})
SLOT(RELU_BWD, "relu_backward", d->relu_backward(p[0], p[1], p[2], c->n), {"dinp", GRAD, SN, F},
     {"inp", IN, SN, F}, {"dout", IN, SN, F})
SLOT(GELU_BWD, "gelu_backward", d->gelu_backward(p[0], p[1], p[2], c->n), {"dinp", GRAD, SN, F},
     {"inp", IN, SN, F}, {"dout", IN, SN, F})
SLOT(MUL_BWD, "mul_backward", d->mul_backward(p[0], p[1], p[2], p[3], p[4], c->n),
     {"da", GRAD, SN, F}, {"db", GRAD, SN, F}, {"dout", IN, SN, F}, {"a", IN, SN, F},
     {"b", IN, SN, F})
SLOT(FILL, "fill", d->fill(p[0], c->s, c->n), {"x", EXACT, SN, F})
SLOT(SUM, "sum_forward", d->sum_forward(p[0], p[1], c->n), {"out", OUT, ONE, F},
     {"inp", IN, SN, F})
SLOT(SUM_BWD, "sum_backward", d->sum_backward(p[0], p[1], c->s, c->n), {"dinp", GRAD, SN, F},
     {"dout", IN, ONE, F})
SLOT(SUMSQ, "sum_squares", return d->sum_squares(p[0], c->n), {"x", IN, SN, F})
SLOT(MEMORY, "copy and zero",
     d->copy((uint8_t *)p[1] + 3, (uint8_t *)p[0] + 5, 777);
     d->zero((uint8_t *)p[0] + 11, 333), {"a", EXACT, SN, U8}, {"b", EXACT, SN, U8})
/* acc: in place (inp = out) */
SLOT(BIAS, "bias_forward", d->bias_forward(p[0], c->acc ? p[0] : p[1], p[2], c->N, c->C),
     {"out", OUT, SNC, F}, {"inp", IN, SNC, F}, {"bias", IN, SC, F})
SLOT(BIAS_BWD, "bias_backward", d->bias_backward(p[0], p[1], c->N, c->C),
     {"dbias", GRAD, SC, F}, {"dout", IN, SNC, F})
SLOT(SOFTMAX, "softmax_forward", d->softmax_forward(p[0], p[1], c->N, c->C),
     {"out", OUT, SNC, F}, {"inp", IN, SNC, F})
SLOT(SOFTMAX_BWD, "softmax_backward", d->softmax_backward(p[0], p[1], p[2], c->N, c->C),
     {"dinp", GRAD, SNC, F}, {"out", IN, SNC, F}, {"dout", IN, SNC, F})
/* layernorm with its rows (and forward's weight) c->stride[0..2] elements past their buffers'
 * starts (0 unless set), lengths c->x[0] (rows) and c->x[1] (forward's weight): where one is
 * off a quad's alignment, cuda/layernorm.cu keeps the rows in memory */
SLOT(LN, "layernorm_forward", real *const *q = (real *const *)p; const int64_t *o = c->stride;
     d->layernorm_forward(q[0] + o[0], q[1], q[2], q[3] + o[1], q[4] + o[2], q[5], c->N, c->C,
                          c->s),
     {"out", OUT, X0, F}, {"mean", OUT, SR, F}, {"rstd", OUT, SR, F}, {"inp", IN, X0, F},
     {"weight", IN, X1, F}, {"bias", IN, SC, F})
SLOT(LN_BWD, "layernorm_backward", real *const *q = (real *const *)p;
     const int64_t *o = c->stride;
     d->layernorm_backward(q[0] + o[0], q[1], q[2], q[3] + o[1], q[4] + o[2], q[5], q[6], q[7],
                           c->N, c->C, c->acc),
     {"dinp", GRAD, X0, F}, {"dweight", GRAD, SC, F}, {"dbias", GRAD, SC, F},
     {"dout", IN, X0, F}, {"inp", IN, X0, F}, {"weight", IN, SC, F}, {"mean", IN, SR, F},
     {"rstd", IN, SR, F})
SLOT(EMBED, "embedding_forward", d->embedding_forward(p[0], p[1], p[2], c->N, c->C, c->V),
     {"out", EXACT, SNC, F}, {"tokens", IN, SR, I32}, {"weight", IN, SVC, F})
SLOT(EMBED_BWD, "embedding_backward", d->embedding_backward(p[0], p[1], p[2], c->N, c->C),
     {"dweight", GRAD, SVC, F}, {"tokens", IN, SR, I32}, {"dout", IN, SNC, F})
SLOT(CE, "crossentropy_forward", d->crossentropy_forward(p[0], p[1], p[2], p[3], c->N, c->V),
     {"loss", OUT, ONE, F}, {"lse", OUT, SR, F}, {"logits", IN, SNV, F},
     {"targets", IN, SR, I32})
SLOT(CE_BWD, "crossentropy_backward",
     d->crossentropy_backward(p[0], p[1], p[2], p[3], p[4], c->N, c->V),
     {"dlogits", GRAD, SNV, F}, {"dloss", IN, ONE, F}, {"logits", IN, SNV, F},
     {"lse", IN, SR, F}, {"targets", IN, SR, I32})
SLOT(DROPOUT, "dropout_forward", d->dropout_forward(p[0], p[1], p[2], c->p, c->at, c->n),
     {"out", DROP, SN, F}, {"mask", EXACT, SN, U8}, {"inp", IN, SN, F})
SLOT(DROPOUT_BWD, "dropout_backward",
     d->dropout_backward(p[0], p[1], p[2], c->p, c->n, c->acc),
     {"dinp", GRAD, SN, F}, {"mask", IN, SN, U8}, {"dout", IN, SN, F})
SLOT(RELU_DROP, "relu_dropout_forward", d->relu_dropout_forward(p[0], c->p, c->at, c->n),
     {"x", DROP, SN, F})
SLOT(RELU_DROP_BWD, "relu_dropout_backward",
     d->relu_dropout_backward(p[0], p[1], p[2], c->p, c->n, c->acc), {"dx", GRAD, SN, F},
     {"out", IN, SN, F}, {"dout", IN, SN, F})
SLOT(GELU_DROP, "gelu_dropout_forward",
     d->gelu_dropout_forward(p[0], p[1], p[2], p[3], c->p, c->at, c->n), {"out", DROP, SN, F},
     {"mask", EXACT, SN, U8}, {"deriv", OUT, SN, F}, {"inp", IN, SN, F})
SLOT(GELU_DROP_BWD, "gelu_dropout_backward",
     d->gelu_dropout_backward(p[0], p[1], p[2], p[3], c->p, c->n, c->acc), {"dinp", GRAD, SN, F},
     {"mask", IN, SN, U8}, {"deriv", IN, SN, F}, {"dout", IN, SN, F})
/* x is read: compared like a sum */
SLOT(DROP_ADD, "dropout_add_forward", d->dropout_add_forward(p[0], p[1], p[2], c->p, c->at, c->n),
     {"x", GRAD, SN, F}, {"mask", EXACT, SN, U8}, {"res", IN, SN, F})
SLOT(ADAMW, "adamw_step", d->adamw_step(p[0], p[1], p[2], p[3], &c->adamw, p[4], c->n),
     {"p", OUT, SN, F}, {"m", OUT, SN, F}, {"v", OUT, SN, F}, {"g", IN, SN, F},
     {"gate", IN, ONE, F})
SLOT(SGD, "sgd_step", d->sgd_step(p[0], p[1], p[2], &c->sgd, p[3], c->n), {"p", OUT, SN, F},
     {"buf", OUT, SN, F}, {"g", IN, SN, F}, {"gate", IN, ONE, F})
/* the norm comes back through a device double: returned, compared within 1e-12 relative */
SLOT(CLIP, "clip_grads", double *norm = d->alloc(sizeof(double)); double host = 0;
     d->clip_grads(p[0], c->n, (double)c->s, norm); d->to_host(&host, norm, sizeof host);
     d->free(norm); return host, {"g", GRAD, SN, F})
/* c->op[0] without its pointers, the strides and the batch from c */
SLOT(GEMM, "gemm", const tt_gemm_op *g = &c->op[0];
     d->gemm(g->ta, g->tb, g->M, g->N, g->K, g->alpha, p[1], g->lda, c->stride[0], p[2], g->ldb,
             c->stride[1], g->beta, p[0], g->ldc, c->stride[2], c->batch),
     {"C", OUT, X0, F}, {"A", IN, X1, F}, {"B", IN, X2, F})
/* c->op: dx = dy W and dw = dy^T x without their pointers; C = out, V = in */
SLOT(LINEAR_BWD, "linear_backward", tt_gemm_op gx = c->op[0]; tt_gemm_op gw = c->op[1];
     gx.A = gw.A = p[3]; gx.B = p[4]; gw.B = p[5]; gx.C = p[0]; gw.C = p[1];
     d->linear_backward(p[0] ? &gx : NULL, p[1] ? &gw : NULL, p[2], p[3], c->N, c->C),
     {"dx", GRAD, SNV, F}, {"dw", GRAD, SVC, F}, {"db", GRAD, SC, F}, {"dy", IN, SNC, F},
     {"W", IN, SVC, F}, {"x", IN, SNV, F})

/* out = x W^T + bias, out, x and W (their lengths c->x[0..2]) c->stride[0] elements past their
 * buffers' start, bias (length c->x[3]) c->stride[1]: C = out, V = in */
SLOT(LINEAR, "linear_forward", real *const *q = (real *const *)p;
     const int64_t o = c->stride[0]; const int64_t ob = c->stride[1];
     d->linear_forward(q[0] + o, q[1] + o, q[2] + o, q[3] ? q[3] + ob : NULL, c->N, c->V, c->C),
     {"out", OUT, X0, F}, {"x", IN, X1, F}, {"W", IN, X2, F}, {"bias", IN, X3, F})

/* tensor t of q, k, v (or of their gradients) whose first is argument `first`: packed, the
 * column block t of that one buffer */
static real *qkv(const kcase *c, void *const *p, int first, int t)
{
    real *base = p[first + (c->packed ? 0 : t)];
    return c->packed ? base + (int64_t)t * c->attn.NH * c->attn.HS : base;
}

/* lengths x: out and dout, att and keep, q/k/v (or the packed qkv), pad */
SLOT(ATTN, "attention_forward",
     d->attention_forward(p[0], p[1], p[2], qkv(c, p, 3, 0), qkv(c, p, 3, 1), qkv(c, p, 3, 2),
                          p[6], &c->attn, c->at, p[7]),
     {"out", OUT, X0, F}, {"att", OUT, X1, F}, {"keep", EXACT, X1, U8}, {"q", IN, X2, F},
     {"k", IN, X2, F}, {"v", IN, X2, F}, {"pad", IN, X3, I32}, {"scratch", SCRATCH, ONE, F})
/* bit t of c->sub: gradient t wanted (else NULL, and its buffer must stay the prefill) */
SLOT(ATTN_BWD, "attention_backward", real *g[3];
     for (int t = 0; t < 3; t++) g[t] = c->sub & (1 << t) ? qkv(c, p, 0, t) : NULL;
     d->attention_backward(g[0], g[1], g[2], p[3], p[4], p[5], qkv(c, p, 6, 0), qkv(c, p, 6, 1),
                           qkv(c, p, 6, 2), &c->attn, p[9]),
     {"dq", GRAD, X2, F}, {"dk", GRAD, X2, F}, {"dv", GRAD, X2, F}, {"dout", IN, X0, F},
     {"att", IN, X1, F}, {"keep", IN, X1, U8}, {"q", IN, X2, F}, {"k", IN, X2, F},
     {"v", IN, X2, F}, {"scratch", SCRATCH, ONE, F})

/* ---- sizes and cursors --------------------------------------------------------------------- */

static const int64_t FLAT_N[] = {1, 7, 33, 1001, 4099, 100003};
enum { NFLAT = sizeof FLAT_N / sizeof FLAT_N[0] };
/* (N, C); 1037 rows: more than the column sums' rounds of 4 x 128 rows (common.cuh) */
static const struct {
    int64_t N;
    int C;
} ROWS[] = {{1, 1}, {3, 1}, {1, 7}, {5, 33}, {17, 257}, {64, 1000}, {3, 4099}, {1037, 19}};
enum { NROWS = sizeof ROWS / sizeof ROWS[0] };

/* Dropout cursors: 0 a fresh stream; 1 past draws of 7 and 1001 elements (Philox block 253);
 * 2 a seed and stream with high words set and block 2^32 - 3, so that a draw crosses the wrap
 * of the counter's low word. Counters are multiples of 4 by construction (tt_rng_take). */
static tt_rng cursor(int kind, int64_t n)
{
    tt_rng r;
    tt_rng_init(&r, kind == 2 ? 0x9E3779B97F4A7C15ull : 1234, kind == 2 ? (1ull << 33) + 3 : 7);
    if (kind == 1) {
        tt_rng_take(&r, 7);
        tt_rng_take(&r, 1001);
    }
    if (kind == 2) r.counter = (1ull << 34) - 12;
    return tt_rng_take(&r, n);
}

/* ---- elementwise and rows ------------------------------------------------------------------ */

/* the slots over n elements, with the arguments to leave NULL (bits) */
static const struct {
    const slot *s;
    int nulls;
} FLAT[] = {{&ADD, 0},      {&MUL, 0},     {&SCALE, 0},   {&AXPY, 0},     {&RELU, 0},
            {&GELU, 0},     {&RELU_BWD, 0}, {&GELU_BWD, 0}, {&MUL_BWD, 0}, {&MUL_BWD, 1},
            {&MUL_BWD, 2},  {&FILL, 0},    {&SUM, 0},     {&SUM_BWD, 0},  {&SUMSQ, 0}};

START_TEST(test_elementwise)
{
    NEED_GPU();
    for (size_t k = 0; k < sizeof FLAT / sizeof FLAT[0]; k++)
        for (int s = 0; s < NFLAT; s++) {
            kcase c = {.n = FLAT_N[s], .s = R(-0.375)};
            kc_new(&c, FLAT[k].s, FLAT[k].nulls, NULL);
            if (FLAT[k].s == &SUM) /* a sum far from 0: compared relative to itself */
                for (int64_t i = 0; i < c.n; i++) ((real *)c.a[1].init)[i] += R(1);
            kc_run(&c); /* sum_squares: the returned doubles within 1e-12 relative */
        }
    ck_assert_str_eq(gpu->name, "cuda");
    kcase c = {.n = 1001};
    kc_new(&c, &MEMORY, 0, ": 777 bytes copied, 333 zeroed, at odd offsets");
    for (int i = 0; i < 1001; i++) ((uint8_t *)c.a[0].init)[i] = (uint8_t)(i * 37 + 11);
    kc_run(&c);
}
END_TEST

START_TEST(test_rows)
{
    NEED_GPU();
    static const char *const BIAS_HOW[] = {"", ", in place", ", from no input"};
    static const int LN_FROM[][2] = {{4, 3}, {5, 4}, {6, 1}, {7, 2}}; /* inp, weight, mean, rstd */
    for (int s = 0; s < NROWS; s++) {
        const int64_t N = ROWS[s].N, NC = N * ROWS[s].C;
        const int C = ROWS[s].C;
        for (int v = 0; v < 3; v++) {
            kcase c = {.N = N, .C = C, .acc = v == 1};
            kc_new(&c, &BIAS, v ? 2 : 0, BIAS_HOW[v]);
            if (v == 1) c.a[0].role = GRAD; /* in place, out is read: compared like a sum */
            kc_run(&c);
        }
        kcase c = {.N = N, .C = C};
        kc_new(&c, &BIAS_BWD, 0, NULL);
        kc_run(&c);

        /* softmax of scores with -inf entries and (N > 1) a row of -inf only */
        kcase f = {.N = N, .C = C};
        kc_new(&f, &SOFTMAX, 0, NULL);
        real *x = f.a[1].init;
        for (int64_t i = 0; i < NC; i++) {
            x[i] *= R(3);
            if ((C > 1 && i % 7 == 3) || (N > 1 && i / C == 1)) x[i] = -R_INF;
        }
        kc_check(&f);
        c = (kcase){.N = N, .C = C};
        kc_new(&c, &SOFTMAX_BWD, 0, NULL);
        kc_copy(&c, 1, &f, 0);
        kc_run(&c);
        kc_free(&f);

        /* layernorm of rows with a mean near 2; backward with each gradient NULL or not */
        f = (kcase){.N = N, .C = C, .s = R(1e-5), .x = {NC, C}};
        kc_new(&f, &LN, 0, NULL);
        x = f.a[3].init;
        for (int64_t i = 0; i < NC; i++) x[i] += R(2);
        kc_check(&f);
        for (int nulls = 0; nulls < 14; nulls++) { /* dinp added to, then written (junk) */
            c = (kcase){.N = N, .C = C, .x = {NC}, .acc = nulls < 7};
            kc_new(&c, &LN_BWD, nulls % 7, c.acc ? ", acc" : ", written");
            if (!c.acc && c.a[0].role != NONE) c.a[0].role = OUT;
            for (int i = 0; i < 4; i++) kc_copy(&c, LN_FROM[i][0], &f, LN_FROM[i][1]);
            kc_run(&c);
        }
        kc_free(&f);
    }
    /* layernorm where C is a multiple of 4, each row then in registers (1, 2, 4, 6 and 8
     * quads a lane, C = 1024 the largest, 1028 past it), its pointers as allocated or one of
     * them an element off the quads' alignment (back to the rows in memory); backward from
     * forward's inp, mean and rstd */
    static const struct {
        int64_t N;
        int C;
    } LNQ[] = {{3, 4}, {5, 12}, {7, 128}, {9, 132}, {3, 512}, {6, 516}, {9, 768}, {5, 1024},
               {4, 1028}};
    static const char *const LN_OFF[] = {"", ", out/dinp off", ", inp/dout off",
                                         ", weight/inp off"};
    for (size_t s = 0; s < sizeof LNQ / sizeof LNQ[0]; s++)
        for (int v = 0; v < 4; v++) {
            const int64_t N = LNQ[s].N;
            const int C = LNQ[s].C;
            kcase f = {.N = N, .C = C, .s = R(1e-5), .x = {N * C + 1, C + 1}};
            for (int k = 0; k < 3; k++) f.stride[k] = v == k + 1;
            kc_new(&f, &LN, 0, LN_OFF[v]);
            real *x = f.a[3].init;
            for (int64_t i = 0; i < N * C + 1; i++) x[i] += R(2);
            kc_check(&f);
            /* dinp added to, but written where it is off the quads (the plain kernel) */
            kcase c = {.N = N, .C = C, .x = {N * C + 1}, .acc = v != 1};
            for (int k = 0; k < 3; k++) c.stride[k] = v == k + 1;
            kc_new(&c, &LN_BWD, 0, LN_OFF[v]);
            if (!c.acc) c.a[0].role = OUT;
            kc_copy(&c, 4, &f, 3); /* inp, mean, rstd */
            kc_copy(&c, 6, &f, 1);
            kc_copy(&c, 7, &f, 2);
            kc_run(&c);
            kc_free(&f);
        }
    /* more elements than the grid has threads (65535 blocks of 256), so that a thread of
     * bias_kernel takes several, its column moved by the grid's stride mod C each time */
    kcase c = {.N = 66001, .C = 263}; /* 263 does not divide the stride, 65535 * 256 */
    kc_new(&c, &BIAS, 0, ", past the grid's threads");
    kc_run(&c);
}
END_TEST

/* (N, C, V): many repeated tokens where V is small */
static const struct {
    int64_t N;
    int C, V;
} EMB[] = {{1, 1, 1}, {7, 5, 3}, {33, 65, 17}, {1001, 33, 7}, {4099, 257, 1000}};

START_TEST(test_embedding_and_loss)
{
    NEED_GPU();
    for (size_t s = 0; s < sizeof EMB / sizeof EMB[0]; s++)
        for (int bwd = 0; bwd < 2; bwd++) {
            kcase c = {.N = EMB[s].N, .C = EMB[s].C, .V = EMB[s].V};
            kc_new(&c, bwd ? &EMBED_BWD : &EMBED, 0, NULL);
            kc_run(&c);
        }
    /* cross-entropy over (N, V) of the row shapes, every 4th target ignored; last, a batch
     * where none counts */
    for (int s = 0; s <= NROWS; s++) {
        const int64_t N = s < NROWS ? ROWS[s].N : 5;
        const int V = s < NROWS ? ROWS[s].C : 7;
        const char *how = s < NROWS ? ", every 4th target ignored" : ", every target ignored";
        kcase f = {.N = N, .V = V};
        kc_new(&f, &CE, 0, how);
        real *x = f.a[2].init;
        int32_t *t = f.a[3].init;
        int64_t count = 0;
        for (int64_t i = 0; i < N * V; i++) x[i] *= R(3);
        for (int64_t i = 0; i < N; i++) {
            if (s == NROWS || i % 4 == 1) t[i] = TT_IGNORE_INDEX;
            count += t[i] != TT_IGNORE_INDEX;
        }
        kc_check(&f);
        kcase c = {.N = N, .V = V};
        kc_new(&c, &CE_BWD, 0, how);
        /* dloss / count = 2.5: gradients about as large as the prefill */
        *(real *)c.a[1].init = (real)(2.5 * (double)(count ? count : 1));
        kc_copy(&c, 2, &f, 2);
        kc_copy(&c, 3, &f, 1);
        kc_copy(&c, 4, &f, 3);
        kc_run(&c);
        kc_free(&f);
    }
}
END_TEST

/* ---- dropout ------------------------------------------------------------------------------- */

START_TEST(test_dropout)
{
    NEED_GPU();
    static const double P[] = {0, 0.1, 0.5, 0.9999999};
    for (int s = 0; s < NFLAT; s++)
        for (int k = 0; k < 12; k++) {
            const int64_t n = FLAT_N[s];
            const real p = (real)P[k / 3];
            const tt_rng at = cursor(k % 3, n);
            char what[48];
            snprintf(what, sizeof what, " p=%.7g cursor %d", (double)p, k % 3);
            kcase f = {.n = n, .p = p, .at = at};
            kc_new(&f, &DROPOUT, 0, what);
            kc_check(&f);
            kcase c;
            for (int acc = 0; acc < 2; acc++) { /* writing (acc 0: dinp is junk) and adding */
                c = (kcase){.n = n, .p = p, .acc = acc};
                kc_new(&c, &DROPOUT_BWD, 0, label("%s acc=%d", what, acc));
                if (!acc) c.a[0].role = OUT;
                kc_copy(&c, 1, &f, 1);
                kc_run(&c);
            }
            kc_free(&f);

            /* relu and dropout in place (x starts in [-9, 9)); the backward from that output,
             * writing (acc 0: dx is junk) and adding */
            f = (kcase){.n = n, .p = p, .at = at};
            kc_new(&f, &RELU_DROP, 0, what);
            kc_check(&f);
            for (int acc = 0; acc < 2; acc++) {
                c = (kcase){.n = n, .p = p, .acc = acc};
                kc_new(&c, &RELU_DROP_BWD, 0, label("%s acc=%d", what, acc));
                if (!acc) c.a[0].role = OUT;
                kc_copy(&c, 1, &f, 0);
                kc_run(&c);
            }
            kc_free(&f);

            /* gelu and dropout (mask NULL at p = 0, as autograd passes it); the backward from
             * its mask and input, writing and adding */
            f = (kcase){.n = n, .p = p, .at = at};
            kc_new(&f, &GELU_DROP, p > R(0) ? 0 : 2, what);
            kc_check(&f);
            for (int acc = 0; acc < 2; acc++) {
                c = (kcase){.n = n, .p = p, .acc = acc};
                kc_new(&c, &GELU_DROP_BWD, p > R(0) ? 0 : 2, label("%s acc=%d", what, acc));
                if (!acc) c.a[0].role = OUT;
                kc_copy(&c, 1, &f, 1);
                kc_copy(&c, 2, &f, 2);
                kc_run(&c);
            }
            kc_free(&f);

            /* the mask NULL at p = 0, as autograd passes it */
            c = (kcase){.n = n, .p = p, .at = at};
            kc_new(&c, &DROP_ADD, p > R(0) ? 0 : 2, what);
            kc_run(&c);
        }
}
END_TEST

/* The forward dropouts make one access per 4 elements where every pointer is aligned to it
 * (dropout.cu's quads), which the cases above always are. Here each pointer sits one element
 * (the mask one byte) past an aligned one, so that the kernels go element by element: the
 * same values and masks as the CPU's, bit for bit, for dropout, dropout then add (in place)
 * and relu then dropout (in place). */
START_TEST(test_dropout_unaligned)
{
    NEED_GPU();
    enum { n = 1001 };
    const size_t bytes = (size_t)n * sizeof(real);
    const real p = R(0.3);
    const tt_rng at = cursor(1, n);
    real *x = tt_test_alloc(n), *res = tt_test_alloc(n), *want = tt_test_alloc(n);
    real *got = tt_test_alloc(n);
    uint8_t wmask[n], gmask[n];
    tt_test_normal(x, n, 51);
    tt_test_normal(res, n, 52);
    real *dx = gpu->alloc(bytes + sizeof(real)), *dres = gpu->alloc(bytes + sizeof(real));
    real *dout = gpu->alloc(bytes + sizeof(real));
    uint8_t *dmask = gpu->alloc((size_t)n + 1);
    gpu->from_host(dx + 1, x, bytes);
    gpu->from_host(dres + 1, res, bytes);
    static const char *const KIND[] = {"dropout", "dropout then add", "relu then dropout"};
    for (int kind = 0; kind < 3; kind++) {
        memcpy(want, x, bytes);
        gpu->from_host(dout + 1, x, bytes);
        if (kind == 0) {
            cpu->dropout_forward(want, wmask, x, p, at, n);
            gpu->dropout_forward(dout + 1, dmask + 1, dx + 1, p, at, n);
        } else if (kind == 1) {
            cpu->dropout_add_forward(want, wmask, res, p, at, n);
            gpu->dropout_add_forward(dout + 1, dmask + 1, dres + 1, p, at, n);
        } else {
            cpu->relu_dropout_forward(want, p, at, n);
            gpu->relu_dropout_forward(dout + 1, p, at, n);
        }
        gpu->to_host(got, dout + 1, bytes);
        ck_assert_msg(memcmp(got, want, bytes) == 0, "%s, unaligned: values differ", KIND[kind]);
        if (kind == 2) continue;
        gpu->to_host(gmask, dmask + 1, (size_t)n);
        ck_assert_msg(memcmp(gmask, wmask, (size_t)n) == 0, "%s, unaligned: masks differ",
                      KIND[kind]);
    }
    gpu->free(dx);
    gpu->free(dres);
    gpu->free(dout);
    gpu->free(dmask);
    free(x);
    free(res);
    free(want);
    free(got);
}
END_TEST

/* ---- gemm ---------------------------------------------------------------------------------- */

static const struct {
    int M, N, K, batch;
} GEMMS[] = {{1, 1, 1, 1},       {3, 1, 5, 2},       {5, 33, 7, 3},
             {17, 257, 33, 2},   {64, 1000, 31, 1},  {7, 9, 1000, 2}};

/* Elements of `batch` matrices of rows x width with row stride *ld = width + pad and matrix
 * stride *stride: the matrix and a gap of 2, or 0 (one matrix shared by the batch). */
static int64_t operand(int rows, int width, int pad, bool shared, int batch, int *ld,
                       int64_t *stride)
{
    *ld = width + pad;
    int64_t one = (int64_t)rows * *ld;
    *stride = shared ? 0 : one + 2;
    return (int64_t)(batch - 1) * *stride + one;
}

START_TEST(test_gemm)
{
    NEED_GPU();
    static const real AB[3][2] = {{1, 0}, {0.75, -0.5}, {-1.25, 1}}; /* alpha, beta */
    for (size_t s = 0; s < sizeof GEMMS / sizeof GEMMS[0]; s++)
        for (int k = 0; k < 12; k++) { /* k % 4: the transposes; k / 4: 0 no padding, 1 A
                                          shared, 2 B shared, and alpha, beta */
            const int M = GEMMS[s].M, N = GEMMS[s].N, K = GEMMS[s].K, v = k / 4;
            const bool ta = k & 1, tb = k & 2;
            kcase c = {.batch = GEMMS[s].batch};
            tt_gemm_op *g = &c.op[0];
            *g = (tt_gemm_op){.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .alpha = AB[v][0],
                              .beta = AB[v][1]};
            c.x[0] = operand(M, N, v ? 3 : 0, false, c.batch, &g->ldc, &c.stride[2]);
            c.x[1] = operand(ta ? K : M, ta ? M : K, v ? 5 : 0, v == 1, c.batch, &g->lda,
                             &c.stride[0]);
            c.x[2] = operand(tb ? N : K, tb ? K : N, v ? 1 : 0, v == 2, c.batch, &g->ldb,
                             &c.stride[1]);
            kc_new(&c, &GEMM, 0,
                   label(" ta=%d tb=%d M=%d N=%d K=%d batch %d alpha %g beta %g, ld %d %d %d, "
                         "strides %lld %lld %lld", ta, tb, M, N, K, c.batch, (double)g->alpha,
                         (double)g->beta, g->lda, g->ldb, g->ldc, (long long)c.stride[0],
                         (long long)c.stride[1], (long long)c.stride[2]));
            if (g->beta != R(0)) c.a[0].role = GRAD; /* C is read */
            kc_run(&c);
        }
    /* linear_forward (N, in, out), with a bias or none, out, x, W and the bias as allocated or
     * one element past (where cuBLASLt, matmul.cu, gets only the element's alignment; a bias
     * off 16 bytes goes to the bias kernel and a gemm) */
    static const int LIN[][3] = {{1, 1, 1}, {5, 33, 7}, {17, 65, 257}, {64, 100, 33}};
    static const int OFF[][3] = {/* off, the bias's off, bias */
                                 {0, 0, 1}, {0, 0, 0}, {1, 1, 1}, {1, 0, 0}, {1, 0, 1}, {0, 1, 1}};
    for (int s = 0; s < 4; s++)
        for (int v = 0; v < 6; v++) {
            const int N = LIN[s][0], in = LIN[s][1], out = LIN[s][2], off = OFF[v][0];
            const int boff = OFF[v][1];
            kcase c = {.N = N, .C = out, .V = in, .stride = {off, boff}};
            c.x[0] = (int64_t)N * out + off, c.x[1] = (int64_t)N * in + off;
            c.x[2] = (int64_t)out * in + off, c.x[3] = out + boff;
            kc_new(&c, &LINEAR, OFF[v][2] ? 0 : 8,
                   label(" (C out, V in), %d past, bias %d past", off, boff));
            kc_run(&c);
        }
    /* linear_backward (N, in, out), each of dx, dw, db NULL or not */
    static const int NULLS[] = {0, 4, 6, 1}; /* bits: dx, dw, db */
    for (int s = 0; s < 4; s++)
        for (int v = 0; v < 4; v++) {
            const int N = LIN[s][0], in = LIN[s][1], out = LIN[s][2];
            kcase c = {.N = N, .C = out, .V = in};
            c.op[0] = (tt_gemm_op){.M = N, .N = in, .K = out, .alpha = R(1), .lda = out,
                                   .ldb = in, .beta = R(1), .ldc = in};
            c.op[1] = (tt_gemm_op){.ta = true, .M = out, .N = in, .K = N, .alpha = R(1),
                                   .lda = out, .ldb = in, .beta = R(1), .ldc = in};
            kc_new(&c, &LINEAR_BWD, NULLS[v], " (C out, V in)");
            kc_run(&c);
        }
}
END_TEST

/* ---- attention ----------------------------------------------------------------------------- */

/* T = 1: one key per row; HS = 1: one channel per head; the larger ones span several tiles
 * (T 129: three chunks of 64 keys, and two of ds_rows's rounds of 128 columns, the second
 * with one; HS 97: two chunks of the head dimension, odd). T 36, HS 6: the staging's 16-byte
 * copies (attention.cuh copy_tile) where rows of T and of NH HS are whole quads (the saved
 * weights' chunks, head 0's in float32), one quad cut short (6 = 4 + 2), head 1 off a quad's
 * alignment (the copies of one real). T 258: past the 256 columns ds_rows holds whole (its
 * rows then go in rounds of 128 columns, the third with two). T 100, HS 64 (base's head
 * size): attention_mma.cu at its widest with 4 tiles of 32 keys, so that its pipeline of 3
 * buffers comes round to the first again (T 65 has 3 tiles), and a second block of 64 rows
 * whose last warp (rows 112 ..) has none inside T */
static const struct {
    int B, T, NH, HS;
} ATT[] = {{2, 1, 1, 1},   {3, 5, 3, 5},    {2, 7, 1, 8},    {3, 13, 3, 8},
           {2, 33, 2, 16}, {1, 65, 2, 64},  {2, 129, 1, 32}, {1, 37, 2, 97},
           {2, 36, 2, 6},  {1, 258, 1, 3},  {1, 100, 1, 64}};

/* padding at the end of each sequence, the last all padding, an inner key (3) in the first */
static void fill_pad(int32_t *pad, int B, int T)
{
    for (int b = 0; b < B; b++) {
        int len = b == B - 1 ? 0 : b == 0 ? T : (T + 1) / 2;
        for (int j = 0; j < T; j++) pad[b * T + j] = j >= len;
    }
    if (T > 2) pad[1] = 3;
}

/* TT_CUDA_TEST_LIGHT=1 (scripts/gpu_check.sh's memcheck, which runs each launch far slower):
 * the unpacked cases with the first scale only, each arithmetic over every combination of
 * causal, padding and dropout and every shape (the packed layout changes only strides); the
 * backward for dq alone, dk alone, dv alone and all three, which run every variant of its two
 * kernels (dq's with dq, ds or both to write; dkv's with dk, dv or both), 4 of the 7 subsets:
 * 7 launches a case where all 7 subsets made 13. TT_CUDA_TEST_LIGHT=2 (scripts/gpu_check.sh's
 * racecheck, whose hazards are a block's shared-memory accesses on either side of a barrier):
 * the same with two option sets of the 8, none (0) and causal, padding and dropout together
 * (7), which still take every branch of the kernels' staging, masking and tile skipping, on
 * every shape (each head size's instantiation, partial and several tiles): a quarter of 1's
 * launches. */
static int light(void)
{
    static int level = -1; /* read once: the cases ask for every backward subset */
    if (level < 0) {
        const char *e = getenv("TT_CUDA_TEST_LIGHT");
        level = !e || !*e || strcmp(e, "0") == 0 ? 0 : strcmp(e, "2") == 0 ? 2 : 1;
    }
    return level;
}

/* One size, option set (bit 0 causal, 1 padding, 2 dropout 0.3; opt / 8 the scale) and
 * layout: the forward, then the backward from the CPU's att and keep into pre-filled
 * gradients for each non-empty subset of dq, dk, dv. Packed: q, k, v are column blocks of one
 * [B,T,3D] buffer (ld 3D), and so are their gradients; out rows have stride D + 2 (two
 * columns the kernel must not touch). */
static void attention_case(int s, int opt, bool packed, const char *math)
{
    const int B = ATT[s].B, T = ATT[s].T, NH = ATT[s].NH, HS = ATT[s].HS, D = NH * HS;
    const int ld = packed ? 3 * D : D, ldo = packed ? D + 2 : D, sk = opt / 8;
    const double rs = 1 / sqrt((double)HS);
    const tt_attn_desc a = {.B = B, .T = T, .NH = NH, .HS = HS, .ldq = ld, .ldk = ld, .ldv = ld,
                            .ldo = ldo, .scale = (real)(sk == 0 ? rs : sk == 1 ? 1 : rs / 0.5),
                            .causal = opt & 1, .p = opt & 4 ? R(0.3) : R(0)};
    const int64_t x[4] = {(int64_t)B * T * ldo, (int64_t)B * NH * T * T, (int64_t)B * T * ld,
                          (int64_t)B * T};
    static const char *const SCALES[] = {"1/sqrt(HS)", "1", "tau 0.5"};
    char what[128];
    snprintf(what, sizeof what, " %s, %s B%d T%d NH%d HS%d%s%s scale %s p %g", math,
             packed ? "packed" : "unpacked", B, T, NH, HS, a.causal ? " causal" : "",
             opt & 2 ? " pad" : "", SCALES[sk], (double)a.p);
    const int no_keep = a.p > R(0) ? 0 : 1, no_kv = packed ? 3 : 0;

    kcase f = {.attn = a, .packed = packed, .at = cursor(opt % 3, x[1])};
    memcpy(f.x, x, sizeof x);
    kc_new(&f, &ATTN, no_keep << 2 | no_kv << 4 | (opt & 2 ? 0 : 1 << 6), what);
    if (opt & 2) fill_pad(f.a[6].init, B, T);
    kc_check(&f);
    for (int sub = 1; sub < 8; sub++) {
        if (light() && sub != 1 && sub != 2 && sub != 4 && sub != 7) continue;
        kcase c = {.attn = a, .packed = packed, .bwd = true, .sub = sub};
        memcpy(c.x, x, sizeof x);
        kc_new(&c, &ATTN_BWD, no_kv << 1 | no_keep << 5 | no_kv << 7,
               label("%s, computing%s%s%s", what, sub & 1 ? " dq" : "", sub & 2 ? " dk" : "",
                     sub & 4 ? " dv" : ""));
        for (int i = 1; i <= 5; i++) kc_copy(&c, 3 + i, &f, i); /* att, keep, q, k, v */
        kc_run(&c);
    }
    if (packed) { /* a fresh packed gradient (a.fresh, as autograd passes it): written whole */
        kcase c = {.attn = a, .packed = packed, .bwd = true, .sub = 7};
        c.attn.fresh = true;
        memcpy(c.x, x, sizeof x);
        kc_new(&c, &ATTN_BWD, no_kv << 1 | no_keep << 5 | no_kv << 7,
               label("%s, fresh gradients", what));
        c.a[0].role = OUT;
        for (int i = 1; i <= 5; i++) kc_copy(&c, 3 + i, &f, i);
        kc_run(&c);
    }
    kc_free(&f);
}

/* The kernels' arithmetic (cuda.h) and what each is held to: the float cores in both tilings
 * over every option set and the three TF32 products (wmma, and mma.sync: attention_mma.cu,
 * whose fragment layout the emulator takes from PTX's documentation) over every third, which
 * still covers each combination of causal, padding and dropout, to CU_TOL; one TF32 product
 * (10 mantissa bits) over the same sets to 3e-2, far below what a wrong index gives. The
 * shapes' head sizes put mma.sync at each of its widths (16, 32, 64) and past them (97).
 * Each arithmetic is a test of its own (a loop test), so that one failing does not hide how
 * the others fare; every message names it as TT_CUDA_ATTN does, "[TT_CUDA_ATTN=mma-tf32]",
 * which scripts/gpu_check.sh reads to leave a failing one out of its pick. */
static const struct {
    tt_cuda_attn_math math;
    const char *name, *env;
    double tol;
    int opt_step;
} MATHS[] = {
    {TT_CUDA_ATTN_WIDE, "float cores", "wide", CU_TOL, 1},
    {TT_CUDA_ATTN_PIPE, "float cores, cp.async", "pipelined", CU_TOL, 1},
#ifndef TT_DOUBLE
    {TT_CUDA_ATTN_TF32X3, "3xTF32", "3xtf32", CU_TOL, 3},
    {TT_CUDA_ATTN_TF32, "TF32", "tf32", 3e-2, 3},
    {TT_CUDA_ATTN_MMA3, "mma.sync 3xTF32", "mma-3xtf32", CU_TOL, 3},
    {TT_CUDA_ATTN_MMA, "mma.sync TF32", "mma-tf32", 3e-2, 3},
#endif
};
#define N_MATHS ((int)(sizeof MATHS / sizeof MATHS[0]))

/* the attention tcase's fixture: float cores and CU_TOL before and after each test */
static void attention_defaults(void)
{
    tt_cuda_attention_set_math(TT_CUDA_ATTN_WIDE);
    tol = CU_TOL;
}

/* After shape s's launches, each kernel of the arithmetic now set fits an SM at least once
 * (bench_attention's blocks/SM: the kernel and shared-memory size it asks about are the ones
 * launched, which depend on T and, for the mma.sync kernels, on HS); the emulated GPU cannot
 * say (0). */
static void check_residency(int s, const char *math)
{
    const int T = ATT[s].T;
    const tt_attn_desc a = {.B = ATT[s].B, .T = T, .NH = ATT[s].NH, .HS = ATT[s].HS};
    int res[3] = {-1, -1, -1};
    tt_cuda_attention_residency(&a, res);
    for (int k = 0; k < 3; k++) {
#ifdef TT_CUDA_EMULATED
        (void)math;
        ck_assert_int_eq(res[k], 0);
#else
        ck_assert_msg(res[k] >= 1, "attention %s, T %d HS %d: %s kernel, %d blocks an SM", math,
                      T, a.HS, (const char *[]){"forward", "dq", "dkv"}[k], res[k]);
#endif
    }
}

/* arithmetic m over every shape (the tests' _i) */
static void attention_cases(int m, bool packed)
{
    const int lt = light(), opts = lt ? 8 : 24;
    char math[64];
    snprintf(math, sizeof math, "%s [TT_CUDA_ATTN=%s]", MATHS[m].name, MATHS[m].env);
    tt_cuda_attention_set_math(MATHS[m].math);
    tol = MATHS[m].tol;
    for (int s = 0; s < (int)(sizeof ATT / sizeof ATT[0]); s++) {
        /* past 256 keys every third set too, which still covers each combination */
        const int big = ATT[s].T > 256 ? 3 : 1, step = MATHS[m].opt_step;
        const int next = lt == 2 ? 7 : lt ? 1 : step > big ? step : big;
        for (int opt = 0; opt < opts; opt += next)
            attention_case(s, opt, packed, math);
        check_residency(s, math);
    }
}

START_TEST(test_attention_unpacked)
{
    NEED_GPU();
    attention_cases(_i, false);
}
END_TEST

START_TEST(test_attention_packed)
{
    NEED_GPU();
    if (!light()) attention_cases(_i, true);
}
END_TEST

/* ---- optimizers ---------------------------------------------------------------------------- */

START_TEST(test_optimizers)
{
    NEED_GPU();
    for (int s = 0; s < NFLAT; s++) {
        for (int t = 1; t <= 7; t += 6) { /* the first step, and the 7th from a state */
            const double lr = 1e-3, b1 = 0.9, b2 = 0.999, bc1 = 1 - pow(b1, t),
                         bc2 = 1 - pow(b2, t);
            kcase c = {.n = FLAT_N[s]};
            c.adamw = (tt_adamw_scalars){.decay = (real)(1 - lr * 0.01), .b1 = (real)b1,
                                         .a1 = (real)(1 - b1), .b2 = (real)b2,
                                         .a2 = (real)(1 - b2), .step = (real)(lr / bc1),
                                         .bc2_sqrt = (real)sqrt(bc2), .eps = (real)1e-8};
            /* the gate: a finite loss, none (NULL), a NaN and an infinite loss (no update:
             * the CPU's outputs are the initial contents, and the GPU's must equal them) */
            static const char *const GATE[] = {"finite", "NULL", "NaN", "inf"};
            for (int gate = 0; gate < 4; gate++) {
                kcase g = c;
                kc_new(&g, &ADAMW, gate == 1 ? 1 << 4 : 0, label(" step %d gate %s", t,
                                                                 GATE[gate]));
                real *v = g.a[2].init;
                for (int64_t i = 0; i < g.n; i++) v[i] = v[i] * v[i] * R(1e-3); /* >= 0 */
                if (gate >= 2) *(real *)g.a[4].init = gate == 2 ? (real)NAN : R_INF;
                kc_check(&g);
                for (int a = 0; a < 3 && gate >= 2; a++)
                    ck_assert_msg(memcmp(g.a[a].want, g.a[a].init, arg_bytes(&g.a[a])) == 0,
                                  "%s: the CPU updated %s", g.desc, g.a[a].name);
                kc_free(&g);
            }
        }
        for (int v = 0; v < 8; v++) { /* weight decay, momentum, first step: each on or off */
            kcase c = {.n = FLAT_N[s]};
            c.sgd = (tt_sgd_scalars){.wd = v & 1 ? R(0.01) : R(0), .mu = R(0.9),
                                     .neg_lr = R(-0.05), .use_buf = v & 2, .first = v & 4};
            kc_new(&c, &SGD, v == 5 ? 1 << 3 : 0,
                   label(" wd %g momentum %d first %d%s", (double)c.sgd.wd, c.sgd.use_buf,
                         c.sgd.first, v == 6 ? " gate NaN" : ""));
            if (v == 6) *(real *)c.a[3].init = (real)NAN;
            kc_run(&c);
        }
        /* clipping: off (max 0), far above the norm (no scaling), below it (scaled) */
        static const double MAX_NORM[] = {0, 1e30, 0.5};
        for (int m = 0; m < 3; m++) {
            kcase c = {.n = FLAT_N[s], .s = (real)MAX_NORM[m]};
            kc_new(&c, &CLIP, 0, label(" max_norm %g", MAX_NORM[m]));
            kc_run(&c);
        }
    }
}
END_TEST

/* ---- determinism: reductions over many blocks, twice on the device, the same bits ---------- */

START_TEST(test_determinism)
{
    NEED_GPU();
    const kcase sizes[] = {{.N = 4099, .C = 257}, {.N = 4099, .C = 257, .x = {4099 * 257}},
                           {.N = 4099, .C = 65, .V = 7}, {.n = (1 << 20) + 7},
                           {.n = (1 << 20) + 7}, {.N = 1001, .V = 1000}};
    const slot *const slots[] = {&BIAS_BWD, &LN_BWD, &EMBED_BWD, &SUMSQ, &SUM, &CE};
    for (int k = 0; k < 6; k++) {
        kcase c = sizes[k];
        kc_new(&c, slots[k], 0, NULL);
        if (slots[k] == &LN_BWD) /* rstd > 0 */
            for (int64_t i = 0; i < c.N; i++) ((real *)c.a[7].init)[i] += R(5);
        kc_run_twice(&c);
    }
}
END_TEST

/* ---- matmul precision ---------------------------------------------------------------------- */

/* "high" lets cuBLAS round float32 inputs to TF32 (10 mantissa bits): a gemm with K = 1024
 * then differs from the CPU's by more than float32 rounding, but within 1e-2 of the largest
 * value; "highest" is back within CU_TOL. float64 has no such mode: equal within CU_TOL. */
START_TEST(test_matmul_precision)
{
    NEED_GPU();
    unsetenv("TT_CUDA_ATTN"); /* the pick below, not an override */
    const int M = 256, N = 256, K = 1024;
    const size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    real *a = tt_test_alloc((int64_t)na), *b = tt_test_alloc((int64_t)nb);
    real *bias = tt_test_alloc(N), *got = tt_test_alloc((int64_t)nc);
    real *want[2] = {tt_test_alloc((int64_t)nc), tt_test_alloc((int64_t)nc)};
    tt_test_normal(a, (int64_t)na, 41);
    tt_test_normal(b, (int64_t)nb, 42);
    tt_test_normal(bias, N, 43);
    /* the gemm a b, and a Linear's forward a W^T + bias with b read as W (N,K) */
    cpu->gemm(false, false, M, N, K, R(1), a, K, 0, b, N, 0, R(0), want[0], N, 0, 1);
    cpu->linear_forward(want[1], a, b, bias, M, K, N);
    real *da = gpu->alloc(na * sizeof(real)), *db = gpu->alloc(nb * sizeof(real));
    real *dc = gpu->alloc(nc * sizeof(real)), *dbias = gpu->alloc(N * sizeof(real));
    gpu->from_host(da, a, na * sizeof(real));
    gpu->from_host(db, b, nb * sizeof(real));
    gpu->from_host(dbias, bias, N * sizeof(real));
    for (int high = 1; high >= 0; high--) {
        gpu->set_matmul_precision(high);
        /* backend.cu's pick: cp.async float cores at highest, mma.sync TF32 at high (float64
         * builds have only the float cores) */
        ck_assert_int_eq(tt_cuda_attention_math(), !high ? TT_CUDA_ATTN_PIPE
                                                   : sizeof(real) == sizeof(float)
                                                       ? TT_CUDA_ATTN_MMA
                                                       : TT_CUDA_ATTN_WIDE);
        for (int k = 0; k < 2; k++) {
            const char *what = k ? "linear_forward" : "gemm";
            if (k)
                gpu->linear_forward(dc, da, db, dbias, M, K, N);
            else
                gpu->gemm(false, false, M, N, K, R(1), da, K, 0, db, N, 0, R(0), dc, N, 0, 1);
            gpu->to_host(got, dc, nc * sizeof(real));
            double worst = 0, scale = 0;
            for (size_t i = 0; i < nc; i++) {
                worst = fmax(worst, fabs((double)got[i] - (double)want[k][i]));
                scale = fmax(scale, fabs((double)want[k][i]));
            }
            const bool tf32 = high && sizeof(real) == sizeof(float);
            printf("matmul_precision %s, %s: largest difference from the CPU %.3g of %.3g\n",
                   high ? "high" : "highest", what, worst, scale);
            ck_assert_msg(worst <= (tf32 ? 1e-2 : CU_TOL) * scale, "matmul_precision %s, %s: "
                          "%g of %g", high ? "high" : "highest", what, worst, scale);
            if (tf32)
                ck_assert_msg(worst > CU_TOL * scale, "matmul_precision high, %s: %g of %g, as "
                              "close as float32: were TF32 tensor cores used?", what, worst,
                              scale);
        }
    }
    gpu->free(da);
    gpu->free(db);
    gpu->free(dc);
    gpu->free(dbias);
    free(a);
    free(b);
    free(bias);
    free(want[0]);
    free(want[1]);
    free(got);
}
END_TEST

/* TT_CUDA_ATTN overrides the arithmetic set_matmul_precision picks: one name at both
 * precisions, HIGHEST/HIGH per precision; anything else is ignored whole (the table's pick,
 * with a warning; test_matmul_precision checks the table). float64 builds keep only the float
 * cores (set_math). */
/* With TT_CUDA_ATTN=env, the arithmetic at highest is want[0], at high want[1]. */
static void expect_attention_math(const char *env, const tt_cuda_attn_math want[2])
{
    setenv("TT_CUDA_ATTN", env, 1);
    for (int high = 0; high <= 1; high++) {
        gpu->set_matmul_precision(high);
        ck_assert_msg(tt_cuda_attention_math() == want[high],
                      "TT_CUDA_ATTN=%s at %s: arithmetic %d, expected %d", env,
                      high ? "high" : "highest", (int)tt_cuda_attention_math(), (int)want[high]);
    }
}

START_TEST(test_attention_override)
{
    NEED_GPU();
    /* what each name gives here: wide, pipelined, 3xtf32, tf32, mma-3xtf32, mma-tf32; then
     * the table's pick at highest and high (index 6 + high) */
    tt_cuda_attn_math by[8] = {TT_CUDA_ATTN_WIDE, TT_CUDA_ATTN_PIPE,
#ifdef TT_DOUBLE
                               TT_CUDA_ATTN_WIDE, TT_CUDA_ATTN_WIDE, TT_CUDA_ATTN_WIDE,
                               TT_CUDA_ATTN_WIDE};
#else
                               TT_CUDA_ATTN_TF32X3, TT_CUDA_ATTN_TF32, TT_CUDA_ATTN_MMA3,
                               TT_CUDA_ATTN_MMA};
#endif
    unsetenv("TT_CUDA_ATTN");
    for (int high = 0; high <= 1; high++) {
        gpu->set_matmul_precision(high);
        by[6 + high] = tt_cuda_attention_math();
    }
    enum { TABLE = -1 }; /* the table's pick at the precision */
    static const struct {
        const char *env;
        int highest, high; /* indices into by, or TABLE */
    } CASES[] = {
        {"pipelined", 1, 1},      {"tf32", 3, 3},           {"pipelined/wide", 1, 0},
        {"wide/pipelined", 0, 1}, {"3xtf32/tf32", 2, 3},    {"tf32/3xtf32", 3, 2},
        {"pipelined/", TABLE, TABLE},  {"/pipelined", TABLE, TABLE},
        {"pipelined/tf32/wide", TABLE, TABLE}, {"Pipelined", TABLE, TABLE},
        {"wide/nonsense", TABLE, TABLE}, {"tf", TABLE, TABLE}, {"tf32x", TABLE, TABLE},
        {"mma-3xtf32/mma-tf32", 4, 5}, {"mma-tf32", 5, 5}, {"3xtf32/mma-tf32", 2, 5},
        {"mma", TABLE, TABLE}, {"mma-", TABLE, TABLE},
    };
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        const int i[2] = {CASES[k].highest, CASES[k].high};
        expect_attention_math(CASES[k].env,
                              (tt_cuda_attn_math[2]){by[i[0] == TABLE ? 6 : i[0]],
                                                     by[i[1] == TABLE ? 7 : i[1]]});
    }
    /* the names the attention tests' messages give their arithmetic (gpu_check reads them) */
    for (int m = 0; m < N_MATHS; m++)
        expect_attention_math(MATHS[m].env, (tt_cuda_attn_math[2]){MATHS[m].math, MATHS[m].math});
    unsetenv("TT_CUDA_ATTN");
    gpu->set_matmul_precision(false);
    ck_assert_int_eq(tt_cuda_attention_math(), by[6]);
}
END_TEST

/* ---- the step bracket: staging, capture and replay (backend.cu) ---------------------------- */

enum { STEPS = 5 };

/* One device's results after each of STEPS small training steps: a batch copied in, dropout
 * drawn from the step's stream, the output copied to the gradient, clipped (its norm on the
 * device), and an AdamW update gated on the batch's first element, with scalars that change
 * every step; beside that a Linear's backward with the dropout's output as its dy (143 rows of
 * 7) and p as its weight (7 x 143), into zeroed dx, dw, db: a slot that forks a second stream
 * and joins it (backend.cu), whose outputs the next calls read. With replay on, step 1 runs
 * eagerly, step 2 is captured and steps 3.. replay it, so what varies (the batch, the cursor,
 * the scalars) must reach the graph; everything else (pointers, sizes, p, max_norm) stays as
 * it was captured, as in a training step. */
enum { LIN_N = 143, LIN_OUT = 7 };

typedef struct step_results {
    real p[STEPS][1001];
    uint8_t mask[STEPS][1001];
    double norm[STEPS];
    real dx[STEPS][LIN_N * LIN_N], dw[STEPS][1001], db[STEPS][LIN_OUT];
} step_results;

static void run_steps(const tt_backend *d, bool replay, step_results *out)
{
    enum { n = 1001 };
    const size_t bytes = (size_t)n * sizeof(real);
    real *x = d->alloc(bytes), *y = d->alloc(bytes), *g = d->alloc(bytes), *p = d->alloc(bytes);
    real *m = d->alloc(bytes), *v = d->alloc(bytes);
    uint8_t *mask = d->alloc((size_t)n);
    double *norm = d->alloc(sizeof(double));
    const size_t xbytes = (size_t)LIN_N * LIN_N * sizeof(real);
    real *lx = d->alloc(xbytes), *dx = d->alloc(xbytes), *dw = d->alloc(bytes);
    real *db = d->alloc(LIN_OUT * sizeof(real));
    real *host = tt_test_alloc(LIN_N * LIN_N);
    tt_test_normal(host, LIN_N * LIN_N, 6);
    d->from_host(lx, host, xbytes); /* the Linear's input x (143 x 143) */
    tt_test_normal(host, n, 5);
    d->from_host(p, host, bytes);
    /* dx (143,143) += dy (143,7) p (7,143); dw (7,143) += dy^T x */
    const tt_gemm_op gx = {.M = LIN_N, .N = LIN_N, .K = LIN_OUT, .alpha = R(1), .A = y,
                           .lda = LIN_OUT, .B = p, .ldb = LIN_N, .beta = R(1), .C = dx,
                           .ldc = LIN_N};
    const tt_gemm_op gw = {.ta = true, .M = LIN_OUT, .N = LIN_N, .K = LIN_N, .alpha = R(1),
                           .A = y, .lda = LIN_OUT, .B = lx, .ldb = LIN_N, .beta = R(1),
                           .C = dw, .ldc = LIN_N};
    d->zero(m, bytes);
    d->zero(v, bytes);
    d->step_setup(bytes + 4096, replay);
    tt_rng r;
    tt_rng_init(&r, 11, 1); /* run.h's dropout stream */
    for (int t = 1; t <= STEPS; t++) {
        tt_test_normal(host, n, 100 + (uint64_t)t); /* this step's batch */
        const double lr = 1e-2 * t, bc1 = 1 - pow(0.9, t), bc2 = 1 - pow(0.999, t);
        const tt_adamw_scalars sc = {.decay = (real)(1 - lr * 0.01), .b1 = R(0.9),
                                     .a1 = (real)(1 - 0.9), .b2 = R(0.999),
                                     .a2 = (real)(1 - 0.999), .step = (real)(lr / bc1),
                                     .bc2_sqrt = (real)sqrt(bc2), .eps = R(1e-8)};
        d->step_begin(&r);
        d->from_host(x, host, bytes);
        d->dropout_forward(y, mask, x, R(0.25), tt_rng_take(&r, n), n);
        d->zero(dx, xbytes);
        d->zero(dw, bytes);
        d->zero(db, LIN_OUT * sizeof(real));
        d->linear_backward(&gx, &gw, db, y, LIN_N, LIN_OUT);
        d->copy(g, y, bytes);
        d->clip_grads(g, n, 1.0, norm); /* norms about 30: clipped (a constant, as in training) */
        d->adamw_step(p, m, v, g, &sc, x, n);
        d->step_end();
        d->to_host(out->dx[t - 1], dx, xbytes);
        d->to_host(out->dw[t - 1], dw, bytes);
        d->to_host(out->db[t - 1], db, LIN_OUT * sizeof(real));
        d->to_host(out->p[t - 1], p, bytes);
        d->to_host(out->mask[t - 1], mask, (size_t)n);
        d->to_host(&out->norm[t - 1], norm, sizeof(double));
    }
    d->step_setup(0, false);
    free(host);
    real *bufs[] = {x, y, g, p, m, v, lx, dx, dw, db};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) d->free(bufs[i]);
    d->free(mask);
    d->free(norm);
}

START_TEST(test_step_replay)
{
    NEED_GPU();
    step_results *want = tt_xmalloc(sizeof *want), *got = tt_xmalloc(sizeof *got);
    run_steps(cpu, false, want);
    for (int replay = 0; replay < 2; replay++) {
        run_steps(gpu, replay, got);
        for (int t = 0; t < STEPS; t++) {
            char what[64], part[96];
            snprintf(what, sizeof what, "step %d, replay %s", t + 1, replay ? "on" : "off");
            ck_assert_msg(memcmp(got->mask[t], want->mask[t], sizeof want->mask[t]) == 0,
                          "%s: the dropout mask differs from the CPU's", what);
            ck_assert_msg(fabs(got->norm[t] - want->norm[t]) <= 1e-12 * want->norm[t],
                          "%s: norm %.17g, the CPU %.17g", what, got->norm[t], want->norm[t]);
            ck_assert_close(what, got->p[t], want->p[t], 1001, CU_TOL, CU_TOL);
            const struct { const char *name; const real *got, *want; int n; } lin[] = {
                {"dx", got->dx[t], want->dx[t], LIN_N * LIN_N},
                {"dw", got->dw[t], want->dw[t], 1001},
                {"db", got->db[t], want->db[t], LIN_OUT}};
            for (size_t k = 0; k < sizeof lin / sizeof lin[0]; k++) {
                snprintf(part, sizeof part, "%s: linear %s", what, lin[k].name);
                ck_assert_close(part, lin[k].got, lin[k].want, lin[k].n, CU_TOL, CU_TOL);
            }
        }
    }
    free(want);
    free(got);
}
END_TEST

Suite *cuda_suite(void)
{
    Suite *s = suite_create("cuda");
    TCase *tc = new_tcase(s, "kernels");
    tcase_add_test(tc, test_elementwise);
    tcase_add_test(tc, test_rows);
    tcase_add_test(tc, test_embedding_and_loss);
    tc = new_tcase(s, "dropout");
    tcase_add_test(tc, test_dropout);
    tcase_add_test(tc, test_dropout_unaligned);
    tc = new_tcase(s, "gemm");
    tcase_add_test(tc, test_gemm);
    tcase_add_test(tc, test_matmul_precision);
    tcase_add_test(tc, test_attention_override);
    /* the suite's longest cases by far on the emulated GPU, about equal: make test-emu runs
     * each in a job of its own beside the others (CK_INCLUDE_TAGS / CK_EXCLUDE_TAGS) */
    tc = new_tcase(s, "attention");
    tcase_set_tags(tc, "long");
    tcase_add_checked_fixture(tc, attention_defaults, attention_defaults);
    tcase_add_loop_test(tc, test_attention_unpacked, 0, N_MATHS);
    tc = new_tcase(s, "attention_packed");
    tcase_set_tags(tc, "long-packed");
    tcase_add_checked_fixture(tc, attention_defaults, attention_defaults);
    tcase_add_loop_test(tc, test_attention_packed, 0, N_MATHS);
    tc = new_tcase(s, "optimizers");
    tcase_add_test(tc, test_optimizers);
    tcase_add_test(tc, test_determinism);
    tc = new_tcase(s, "step");
    tcase_add_test(tc, test_step_replay);
    return s;
}

#endif /* TT_WITH_CUDA */
