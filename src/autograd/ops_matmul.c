/* ops_matmul.c: matmul and Linear, each with its backward below it.
 *   C = op(A) op(B)  =>  d op(A) = dC op(B)^T,  d op(B) = op(A)^T dC,
 * and when A is stored transposed (ta), dA = (d op(A))^T = op(B) dC^T; likewise for B.
 * Every backward gemm uses beta = 1: gradients accumulate. */
#include "autograd/ops.h"

typedef struct mm_dims {
    int M, N, K, batch;
    int lda, ldb;
    int64_t sA, sB, sC;
} mm_dims;

static int batch_count(tt_shape s)
{
    int b = 1;
    for (int i = 0; i < s.ndim - 2; i++) b *= s.d[i];
    return b;
}

/* Works out the gemm for op(a) op(b) and aborts with both shapes when they do not fit. */
static mm_dims mm_plan(const tt_tensor *a, const tt_tensor *b, bool ta, bool tb, tt_shape *out)
{
    char sa[TT_SHAPE_STR], sb[TT_SHAPE_STR];
    TT_ASSERT_MSG(a->shape.ndim >= 2 && b->shape.ndim >= 2 &&
                  (b->shape.ndim == 2 || b->shape.ndim == a->shape.ndim),
                  "matmul: unsupported ranks %s x %s", tt_shape_str(a->shape, sa),
                  tt_shape_str(b->shape, sb));
    int ar = a->shape.ndim, br = b->shape.ndim;
    mm_dims d = {0};
    d.M = ta ? a->shape.d[ar - 1] : a->shape.d[ar - 2];
    d.K = ta ? a->shape.d[ar - 2] : a->shape.d[ar - 1];
    int kb = tb ? b->shape.d[br - 1] : b->shape.d[br - 2];
    d.N = tb ? b->shape.d[br - 2] : b->shape.d[br - 1];
    TT_ASSERT_MSG(d.K == kb, "matmul: inner dimensions differ: %s%s x %s%s",
                  tt_shape_str(a->shape, sa), ta ? "^T" : "", tt_shape_str(b->shape, sb),
                  tb ? "^T" : "");
    for (int i = 0; br > 2 && i < ar - 2; i++)
        TT_ASSERT_MSG(a->shape.d[i] == b->shape.d[i], "matmul: batch dimensions differ: %s x %s",
                      tt_shape_str(a->shape, sa), tt_shape_str(b->shape, sb));
    d.batch = batch_count(a->shape);
    d.lda = ta ? d.M : d.K;
    d.ldb = tb ? d.K : d.N;
    d.sA = (int64_t)d.M * d.K;
    d.sB = br == 2 ? 0 : (int64_t)d.K * d.N;
    d.sC = (int64_t)d.M * d.N;
    if (br == 2 && !ta) { /* shared b: fold the batch into M, one large gemm */
        d.M *= d.batch;
        d.batch = 1;
    }
    TT_ASSERT_MSG(d.batch == 1 || d.sB != 0,
                  "matmul: a transposed batched a with a shared b is not supported: %s^T x %s",
                  tt_shape_str(a->shape, sa), tt_shape_str(b->shape, sb));
    *out = a->shape;
    out->d[ar - 2] = ta ? a->shape.d[ar - 1] : a->shape.d[ar - 2];
    out->d[ar - 1] = d.N;
    return d;
}

static void matmul_backward(tt_graph *g, tt_node *n)
{
    tt_var *a = n->in[0], *b = n->in[1];
    bool ta = n->i[0], tb = n->i[1];
    tt_shape out;
    mm_dims d = mm_plan(&a->val, &b->val, ta, tb, &out);
    const real *A = a->val.data, *B = b->val.data, *dC = n->out->grad.data;
    real *dA = tt_grad_or_null(g, a), *dB = tt_grad_or_null(g, b);
    if (dA) {
        if (!ta) /* dA (M,K) += dC (M,N) op(B)^T (N,K) */
            g->be->gemm(false, !tb, d.M, d.K, d.N, R(1), dC, d.N, d.sC, B, d.ldb, d.sB, R(1), dA,
                        d.K, d.sA, d.batch);
        else /* dA (K,M) += op(B) (K,N) dC^T (N,M) */
            g->be->gemm(tb, true, d.K, d.M, d.N, R(1), B, d.ldb, d.sB, dC, d.N, d.sC, R(1), dA,
                        d.M, d.sA, d.batch);
    }
    if (dB) {
        /* With a shared B the batch was folded into M, so this is one gemm, not a race. */
        if (!tb) /* dB (K,N) += op(A)^T (K,M) dC (M,N) */
            g->be->gemm(!ta, false, d.K, d.N, d.M, R(1), A, d.lda, d.sA, dC, d.N, d.sC, R(1), dB,
                        d.N, d.sB, d.batch);
        else /* dB (N,K) += dC^T (N,M) op(A) (M,K) */
            g->be->gemm(true, ta, d.N, d.K, d.M, R(1), dC, d.N, d.sC, A, d.lda, d.sA, R(1), dB,
                        d.K, d.sB, d.batch);
    }
}

tt_var *tt_matmul(tt_graph *g, tt_var *a, tt_var *b, bool ta, bool tb)
{
    tt_shape os;
    mm_dims d = mm_plan(&a->val, &b->val, ta, tb, &os);
    tt_var *out = tt_var_new(g, os, TT_REAL);
    g->be->gemm(ta, tb, d.M, d.N, d.K, R(1), a->val.data, d.lda, d.sA, b->val.data, d.ldb, d.sB,
                R(0), out->val.data, d.N, d.sC, d.batch);
    tt_node *n = tt_record(g, "matmul", matmul_backward, out, a, b, NULL);
    if (n) {
        n->i[0] = ta;
        n->i[1] = tb;
    }
    return out;
}

/* Linear: y = x W^T + b with x (N,in), W (out,in):
 *   dx += dy W,  dW += dy^T x,  db += column sums of dy
 * dx is usually fresh (x, a LayerNorm's or an activation's output, has no other consumer):
 * then the gemm writes it (beta 0) instead of adding to a buffer zeroed first. OpenBLAS's
 * large gemms zero C themselves for beta 0 (the pass moves inside them); its small-matrix
 * kernels and cuBLAS write C without reading it. */
static void linear_backward(tt_graph *g, tt_node *n)
{
    tt_var *x = n->in[0], *w = n->in[1], *bias = n->in[2];
    int N = n->i[0], IN = n->i[1], OUT = n->i[2];
    const real *dy = n->out->grad.data;
    bool fresh = false;
    real *dx = x->requires_grad ? tt_var_grad_maybe_fresh(g, x, &fresh) : NULL;
    real *dw = tt_grad_or_null(g, w), *db = tt_grad_or_null(g, bias);
    tt_gemm_op gx = {.ta = false, .tb = false, .M = N, .N = IN, .K = OUT, .alpha = R(1),
                     .A = dy, .lda = OUT, .B = w->val.data, .ldb = IN,
                     .beta = fresh ? R(0) : R(1), .C = dx, .ldc = IN};
    tt_gemm_op gw = {.ta = true, .tb = false, .M = OUT, .N = IN, .K = N, .alpha = R(1), .A = dy,
                     .lda = OUT, .B = x->val.data, .ldb = IN, .beta = R(1), .C = dw, .ldc = IN};
    g->be->linear_backward(dx ? &gx : NULL, dw ? &gw : NULL, db, dy, N, OUT);
}

tt_var *tt_linear(tt_graph *g, tt_var *x, tt_var *w, tt_var *bias)
{
    char sx[TT_SHAPE_STR], sw[TT_SHAPE_STR];
    int xr = x->val.shape.ndim;
    TT_ASSERT_MSG(w->val.shape.ndim == 2 && xr >= 1 && x->val.shape.d[xr - 1] == w->val.shape.d[1],
                  "linear: input %s does not fit weight %s (expected [out,in] with in = the "
                  "input's last dim)", tt_shape_str(x->val.shape, sx), tt_shape_str(w->val.shape, sw));
    int IN = w->val.shape.d[1], OUT = w->val.shape.d[0];
    int N = (int)(x->val.n / (IN ? IN : 1));
    if (bias) tt_assert_same_shape(bias->val.shape, tt_shape1(OUT), "linear bias");
    tt_shape os = x->val.shape;
    os.d[xr - 1] = OUT;
    tt_var *out = tt_var_new(g, os, TT_REAL);
    g->be->linear_forward(out->val.data, x->val.data, w->val.data, bias ? bias->val.data : NULL,
                          N, IN, OUT);
    tt_node *n = tt_record(g, "linear", linear_backward, out, x, w, bias);
    if (n) {
        n->i[0] = N;
        n->i[1] = IN;
        n->i[2] = OUT;
    }
    return out;
}
