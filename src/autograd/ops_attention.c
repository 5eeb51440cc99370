/* ops_attention.c: scaled dot-product attention as one fused op, with its backward below it.
 * Heads are column blocks of the inputs read in place with a row stride, so the packed
 * [B, T, 3D] output of PyTorch's in_proj feeds the kernel without a split or a copy.
 * Math and saved tensors: tensor/cpu/attention.c. */
#include "autograd/ops.h"

/* saved[0] = att (B,NH,T,T), saved[1] = keep mask or none; f = {scale, p};
 * i = {NH, causal, packed} */
static tt_attn_desc desc_of(const tt_node *n)
{
    const tt_shape s = n->out->val.shape;
    int D = s.d[2], NH = n->i[0], ld = n->i[2] ? 3 * D : D;
    return (tt_attn_desc){.B = s.d[0], .T = s.d[1], .NH = NH, .HS = D / NH, .ldq = ld, .ldk = ld,
                          .ldv = ld, .ldo = D, .scale = n->f[0], .causal = n->i[1], .p = n->f[1]};
}

static void sdpa_backward(tt_graph *g, tt_node *n)
{
    tt_attn_desc a = desc_of(n);
    real *dq, *dk, *dv;
    const real *q, *k, *v;
    int D = a.NH * a.HS;
    if (n->i[2]) { /* one buffer, each column once: written when fresh (a.fresh) */
        dq = tt_var_grad_maybe_fresh(g, n->in[0], &a.fresh);
        dk = dq + D;
        dv = dq + 2 * D;
        q = n->in[0]->val.data;
        k = q + D;
        v = q + 2 * D;
    } else {
        dq = tt_grad_or_null(g, n->in[0]);
        dk = tt_grad_or_null(g, n->in[1]);
        dv = tt_grad_or_null(g, n->in[2]);
        q = n->in[0]->val.data;
        k = n->in[1]->val.data;
        v = n->in[2]->val.data;
    }
    real *scratch = tt_arena_alloc(g->data, g->be->attention_scratch(&a, true));
    g->be->attention_backward(dq, dk, dv, n->out->grad.data, n->saved[0].data, n->saved[1].data,
                              q, k, v, &a, scratch);
}

/* The common forward: q, k, v point at the first head's columns of rows of stride ld. */
static tt_var *sdpa(tt_graph *g, tt_var *in[3], bool packed, const real *q, const real *k,
                    const real *v, int B, int T, int D, int n_heads, const tt_sdpa_opts *o,
                    tt_tensor *weights)
{
    TT_ASSERT_MSG(n_heads > 0 && D % n_heads == 0, "sdpa: width %d not divisible by %d heads", D,
                  n_heads);
    TT_ASSERT_MSG(o->dropout >= R(0) && o->dropout < R(1), "sdpa: dropout %g outside [0,1)",
                  (double)o->dropout);
    if (o->pad) {
        char a[TT_SHAPE_STR], b[TT_SHAPE_STR];
        TT_ASSERT_MSG(o->pad->dtype == TT_I32 && tt_shape_eq(o->pad->shape, tt_shape2(B, T)),
                      "sdpa: padding mask %s must be int32 [B,T] = %s",
                      tt_shape_str(o->pad->shape, a), tt_shape_str(tt_shape2(B, T), b));
    }
    real p = g->training ? o->dropout : R(0);
    int ld = packed ? 3 * D : D;
    tt_attn_desc a = {.B = B, .T = T, .NH = n_heads, .HS = D / n_heads, .ldq = ld, .ldk = ld,
                      .ldv = ld, .ldo = D, .scale = o->scale, .causal = o->causal, .p = p};
    tt_var *out = tt_var_new(g, tt_shape3(B, T, D), TT_REAL);
    tt_tensor att = tt_arena_tensor(g->data, tt_shape4(B, n_heads, T, T), TT_REAL);
    int64_t n_att = att.n;
    uint8_t *keep = NULL;
    tt_rng at = {0};
    if (p > R(0)) {
        keep = tt_arena_alloc(g->data, (size_t)n_att);
        at = tt_graph_take(g, n_att);
    }
    real *scratch = tt_arena_alloc(g->data, g->be->attention_scratch(&a, false));
    g->be->attention_forward(out->val.data, att.data, keep, q, k, v,
                             o->pad ? o->pad->data : NULL, &a, at, scratch);
    tt_node *n = tt_record(g, "sdpa", sdpa_backward, out, in[0], in[1], in[2]);
    if (n) {
        n->saved[0] = att;
        n->saved[1].data = keep;
        n->f[0] = o->scale;
        n->f[1] = p;
        n->i[0] = n_heads;
        n->i[1] = o->causal;
        n->i[2] = packed;
    }
    if (weights) *weights = att;
    return out;
}

tt_var *tt_sdpa(tt_graph *g, tt_var *q, tt_var *k, tt_var *v, int n_heads,
                const tt_sdpa_opts *o, tt_tensor *weights)
{
    tt_shape s = q->val.shape;
    TT_ASSERT_MSG(s.ndim == 3, "sdpa: q must be [B,T,D]");
    tt_assert_same_shape(k->val.shape, s, "sdpa k vs q");
    tt_assert_same_shape(v->val.shape, s, "sdpa v vs q");
    tt_var *in[3] = {q, k, v};
    return sdpa(g, in, false, q->val.data, k->val.data, v->val.data, s.d[0], s.d[1], s.d[2],
                n_heads, o, weights);
}

tt_var *tt_sdpa_packed(tt_graph *g, tt_var *qkv, int n_heads, const tt_sdpa_opts *o,
                       tt_tensor *weights)
{
    tt_shape s = qkv->val.shape;
    char a[TT_SHAPE_STR];
    TT_ASSERT_MSG(s.ndim == 3 && s.d[2] % 3 == 0, "sdpa_packed: qkv %s must be [B,T,3D]",
                  tt_shape_str(s, a));
    int D = s.d[2] / 3;
    const real *q = qkv->val.data;
    tt_var *in[3] = {qkv, NULL, NULL};
    return sdpa(g, in, true, q, q + D, q + 2 * D, s.d[0], s.d[1], D, n_heads, o, weights);
}
