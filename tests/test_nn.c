/* test_nn.c: the layers and the model.
 * Both builds: parameter names, shapes and order (docs/design.md section 5, PyTorch's state_dict
 * order), initial values (PyTorch's schemes), the sinusoidal table, learned positions' gradient.
 * Float64 build: central-difference gradient checks (eps 1e-6, atol 1e-5, rtol 1e-3) of the
 * fused attention for every combination of scale x temperature x masks, with and without
 * dropout; multi-head attention; LayerNorm; the FFN with each activation; both positional
 * encodings; an encoder layer post-LN and pre-LN; the whole model's loss with respect to every
 * parameter. Every element of every input is checked. */
#include "testutil.h"

#include "autograd/gradcheck.h"
#include "nn/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tt_model_config tiny_config(void)
{
    return (tt_model_config){.vocab = 7, .n_out = 3, .d_model = 4, .n_heads = 2, .n_layers = 2,
                             .d_ff = 6, .max_len = 6, .activation = TT_ACT_GELU,
                             .pre_norm = false, .positional = TT_POS_LEARNED,
                             .embed_scale = true, .dropout = R(0), .attn_dropout = R(0),
                             .attn_scale = TT_SCALE_SQRT_DK, .attn_temperature = R(1)};
}

START_TEST(test_param_names_and_order)
{
    static const struct {
        const char *name;
        int ndim, d0, d1;
    } want[] = {
        {"embed.weight", 2, 7, 4},
        {"pos_embed.weight", 2, 6, 4},
        {"encoder.layers.0.self_attn.in_proj_weight", 2, 12, 4},
        {"encoder.layers.0.self_attn.in_proj_bias", 1, 12, 0},
        {"encoder.layers.0.self_attn.out_proj.weight", 2, 4, 4},
        {"encoder.layers.0.self_attn.out_proj.bias", 1, 4, 0},
        {"encoder.layers.0.linear1.weight", 2, 6, 4},
        {"encoder.layers.0.linear1.bias", 1, 6, 0},
        {"encoder.layers.0.linear2.weight", 2, 4, 6},
        {"encoder.layers.0.linear2.bias", 1, 4, 0},
        {"encoder.layers.0.norm1.weight", 1, 4, 0},
        {"encoder.layers.0.norm1.bias", 1, 4, 0},
        {"encoder.layers.0.norm2.weight", 1, 4, 0},
        {"encoder.layers.0.norm2.bias", 1, 4, 0},
    };
    tt_model_config c = tiny_config();
    c.n_layers = 1;
    c.pre_norm = true;
    tt_model m;
    tt_model_init(&m, &c, TT_CPU);
    int n_want = (int)(sizeof want / sizeof want[0]);
    ck_assert_int_eq(m.params.n, n_want + 4); /* + encoder.norm and head */
    for (int i = 0; i < n_want; i++) {
        const tt_param *p = m.params.items[i];
        ck_assert_str_eq(p->name, want[i].name);
        ck_assert_int_eq(p->var.val.shape.ndim, want[i].ndim);
        ck_assert_int_eq(p->var.val.shape.d[0], want[i].d0);
        if (want[i].ndim == 2) ck_assert_int_eq(p->var.val.shape.d[1], want[i].d1);
    }
    ck_assert_str_eq(m.params.items[n_want]->name, "encoder.norm.weight");
    ck_assert_str_eq(m.params.items[n_want + 1]->name, "encoder.norm.bias");
    ck_assert_str_eq(m.params.items[n_want + 2]->name, "head.weight");
    ck_assert_str_eq(m.params.items[n_want + 3]->name, "head.bias");
    tt_model_free(&m);

    /* post-LN has no encoder.norm; sinusoidal positions have no parameter */
    c.pre_norm = false;
    c.positional = TT_POS_SINUSOIDAL;
    tt_model_init(&m, &c, TT_CPU);
    ck_assert_ptr_null(tt_params_find(&m.params, "encoder.norm.weight"));
    ck_assert_ptr_null(tt_params_find(&m.params, "pos_embed.weight"));
    ck_assert_int_eq(m.params.n, n_want - 1 + 2);
    tt_model_free(&m);
}
END_TEST

static void range_of(const tt_param *p, double *lo, double *hi, double *mean)
{
    const real *x = p->var.val.data;
    *lo = INFINITY, *hi = -INFINITY, *mean = 0;
    for (int64_t i = 0; i < p->var.val.n; i++) {
        *lo = fmin(*lo, (double)x[i]);
        *hi = fmax(*hi, (double)x[i]);
        *mean += (double)x[i] / (double)p->var.val.n;
    }
}

/* PyTorch's initial values: uniform bounds, normal embeddings, LayerNorm ones and zeros, zero
 * attention biases. Checked on a model large enough for the bounds to be approached. */
START_TEST(test_init_follows_pytorch)
{
    tt_model_config c = tiny_config();
    c.vocab = 50, c.d_model = 32, c.d_ff = 64, c.max_len = 40, c.n_layers = 1;
    tt_model m;
    tt_model_init(&m, &c, TT_CPU);
    tt_model_reset(&m, 1234);
    double lo, hi, mean;
    const struct {
        const char *name;
        double bound; /* > 0: U(-bound, bound); 0: exactly `value` */
        double value;
    } u[] = {
        {"encoder.layers.0.self_attn.in_proj_weight", sqrt(6.0 / (32 + 96)), 0},
        {"encoder.layers.0.self_attn.out_proj.weight", 1 / sqrt(32.0), 0},
        {"encoder.layers.0.linear1.weight", 1 / sqrt(32.0), 0},
        {"encoder.layers.0.linear1.bias", 1 / sqrt(32.0), 0},
        {"encoder.layers.0.linear2.weight", 1 / sqrt(64.0), 0},
        {"head.weight", 1 / sqrt(32.0), 0},
        {"encoder.layers.0.self_attn.in_proj_bias", 0, 0},
        {"encoder.layers.0.self_attn.out_proj.bias", 0, 0},
        {"encoder.layers.0.norm1.weight", 0, 1},
        {"encoder.layers.0.norm2.bias", 0, 0},
    };
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        const tt_param *p = tt_params_find(&m.params, u[i].name);
        ck_assert_ptr_nonnull(p);
        range_of(p, &lo, &hi, &mean);
        if (u[i].bound > 0) {
            ck_assert_msg(lo >= -u[i].bound && hi <= u[i].bound, "%s: [%g, %g] outside +-%g",
                          u[i].name, lo, hi, u[i].bound);
            ck_assert_msg(hi > 0.8 * u[i].bound && lo < -0.8 * u[i].bound,
                          "%s: [%g, %g] does not fill +-%g", u[i].name, lo, hi, u[i].bound);
        } else {
            ck_assert_msg(lo == u[i].value && hi == u[i].value, "%s: [%g, %g], want all %g",
                          u[i].name, lo, hi, u[i].value);
        }
    }
    /* N(0,1) embeddings: 1600 and 1280 draws */
    const char *normal[] = {"embed.weight", "pos_embed.weight"};
    for (int i = 0; i < 2; i++) {
        const tt_param *p = tt_params_find(&m.params, normal[i]);
        const real *x = p->var.val.data;
        double s2 = 0;
        for (int64_t e = 0; e < p->var.val.n; e++) s2 += (double)x[e] * (double)x[e];
        range_of(p, &lo, &hi, &mean);
        double var = s2 / (double)p->var.val.n - mean * mean;
        ck_assert_msg(fabs(mean) < 0.1 && fabs(var - 1) < 0.12, "%s: mean %g var %g", normal[i],
                      mean, var);
    }
    /* the same seed gives the same values; another seed others */
    real *first = tt_test_alloc(m.params.numel);
    memcpy(first, m.params.data, (size_t)m.params.numel * sizeof(real));
    tt_model_reset(&m, 1234);
    ck_assert(memcmp(first, m.params.data, (size_t)m.params.numel * sizeof(real)) == 0);
    tt_model_reset(&m, 1235);
    ck_assert(memcmp(first, m.params.data, (size_t)m.params.numel * sizeof(real)) != 0);
    free(first);
    tt_model_free(&m);
}
END_TEST

START_TEST(test_sinusoid_table)
{
    tt_params ps;
    tt_params_init(&ps, TT_CPU);
    tt_nn_posenc pe;
    tt_nn_posenc_init(&pe, &ps, "pos_embed", TT_POS_SINUSOIDAL, 50, 8);
    tt_params_finalize(&ps);
    ck_assert_int_eq(ps.n, 0);
    const real *tab = pe.table.data;
    /* docs/design.md section 1: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same) */
    for (int pos = 0; pos < 50; pos += 7)
        for (int i = 0; i < 4; i++) {
            double angle = pos / pow(10000.0, 2.0 * i / 8);
            ck_assert_msg(fabs((double)tab[pos * 8 + 2 * i] - sin(angle)) < 1e-6 &&
                              fabs((double)tab[pos * 8 + 2 * i + 1] - cos(angle)) < 1e-6,
                          "pos %d i %d", pos, i);
        }
    ck_assert(tab[0] == R(0) && tab[1] == R(1));
    tt_nn_posenc_free(&pe);
    tt_params_free(&ps);
}
END_TEST

/* Learned positions: x + P[0:T] feeds back into the first T rows only, summed over the batch. */
START_TEST(test_learned_positions_gradient)
{
    enum { Bn = 3, Tn = 4, C = 5, L = 9 };
    tt_test_graph t;
    tt_test_graph_init(&t, 1 << 20, 1);
    tt_params ps;
    tt_params_init(&ps, TT_CPU);
    tt_nn_posenc pe;
    tt_nn_posenc_init(&pe, &ps, "pos_embed", TT_POS_LEARNED, L, C);
    tt_var *x = tt_params_add(&ps, "x", tt_shape3(Bn, Tn, C));
    tt_params_finalize(&ps);
    tt_test_normal(ps.data, ps.numel, 4);
    tt_var *y = tt_nn_posenc_forward(&t.g, &pe, x);
    const real *xv = x->val.data, *pv = pe.weight->val.data;
    for (int e = 0; e < Bn * Tn * C; e++)
        ck_assert_msg(((real *)y->val.data)[e] == xv[e] + pv[e % (Tn * C)], "y[%d]", e);
    real r[Bn * Tn * C];
    tt_test_normal(r, Bn * Tn * C, 5);
    tt_backward(&t.g, tt_sum(&t.g, tt_mul(&t.g, y, tt_var_from_host(&t.g, y->val.shape, TT_REAL,
                                                                      r, false))));
    const real *gp = pe.weight->grad.data;
    for (int e = 0; e < L * C; e++) {
        double want = 0;
        if (e < Tn * C)
            for (int b = 0; b < Bn; b++) want += (double)r[b * Tn * C + e];
        ck_assert_msg(fabs((double)gp[e] - want) < 1e-5, "dP[%d] = %g, want %g", e,
                      (double)gp[e], want);
    }
    ck_assert_close("dx", x->grad.data, r, Bn * Tn * C, 0, 0);
    tt_nn_posenc_free(&pe);
    tt_params_free(&ps);
    tt_test_graph_free(&t);
}
END_TEST

/* The fused dropouts equal the ops they replace, bit for bit: values and the gradients of both
 * inputs, training (same rng cursor, and the same cursor after) and not. */
enum { FUSED_RELU, FUSED_ADD, FUSED_GELU };

static tt_var *fused_or_not(tt_graph *g, int which, bool fused, tt_var *x, tt_var *res, real p)
{
    tt_var *h = tt_scale(g, x, R(1)); /* a fresh value that no node reads: may be written over */
    if (which == FUSED_RELU)
        return fused ? tt_relu_dropout_(g, h, p) : tt_dropout(g, tt_relu(g, h), p);
    if (which == FUSED_GELU)
        return fused ? tt_gelu_dropout(g, h, p) : tt_dropout(g, tt_gelu(g, h), p);
    return fused ? tt_dropout_add_(g, h, res, p) : tt_add(g, res, tt_dropout(g, h, p));
}

START_TEST(test_fused_dropouts_equal_unfused)
{
    enum { n = 1000 };
    static const char *const NAME[] = {"relu_dropout", "dropout_add", "gelu_dropout"};
    for (int which = FUSED_RELU; which <= FUSED_GELU; which++)
        for (int training = 0; training < 2; training++) {
            real y[2][n], gx[2][n], gres[2][n], r[n];
            uint64_t counter[2];
            tt_test_normal(r, n, 9);
            for (int fused = 0; fused < 2; fused++) {
                tt_test_graph t;
                tt_test_graph_init(&t, 1 << 20, 3); /* the same rng for both */
                t.g.training = training;
                tt_params ps;
                tt_params_init(&ps, TT_CPU);
                tt_var *x = tt_params_add(&ps, "x", tt_shape2(40, 25));
                tt_var *res = tt_params_add(&ps, "res", tt_shape2(40, 25));
                tt_params_finalize(&ps);
                tt_test_normal(ps.data, ps.numel, 4);
                tt_var *out = fused_or_not(&t.g, which, fused, x, res, R(0.3));
                memcpy(y[fused], out->val.data, sizeof y[fused]);
                tt_var *rv = tt_var_from_host(&t.g, out->val.shape, TT_REAL, r, false);
                tt_backward(&t.g, tt_sum(&t.g, tt_mul(&t.g, out, rv)));
                memcpy(gx[fused], x->grad.data, sizeof gx[fused]);
                memcpy(gres[fused], res->grad.data, sizeof gres[fused]);
                counter[fused] = t.rng.counter;
                tt_params_free(&ps);
                tt_test_graph_free(&t);
            }
            const char *name = NAME[which];
            ck_assert_msg(counter[0] == counter[1], "%s training=%d: rng at %llu, not %llu", name,
                          training, (unsigned long long)counter[1],
                          (unsigned long long)counter[0]);
            ck_assert_msg(memcmp(y[0], y[1], sizeof y[0]) == 0, "%s training=%d: values differ",
                          name, training);
            ck_assert_msg(memcmp(gx[0], gx[1], sizeof gx[0]) == 0, "%s training=%d: dx differs",
                          name, training);
            ck_assert_msg(memcmp(gres[0], gres[1], sizeof gres[0]) == 0,
                          "%s training=%d: dres differs", name, training);
            int zeros = 0;
            for (int e = 0; e < n; e++) zeros += y[1][e] == R(0);
            /* training drops about 30% more than relu alone zeroes; dropout_add never gives 0 */
            if (which == FUSED_RELU)
                ck_assert_msg(training ? zeros > 600 : zeros < 600, "relu_dropout: %d zeros",
                              zeros);
            if (which == FUSED_GELU) /* GELU itself is 0 only at 0 */
                ck_assert_msg(training ? zeros > 200 : zeros == 0, "gelu_dropout: %d zeros",
                              zeros);
        }
}
END_TEST

#ifdef TT_DOUBLE /* finite differences at eps 1e-6 are meaningless in float32 */

#define MAX_INPUTS 64

/* Checks the gradient of every element of every parameter in ps (all of them inputs). */
static void check_all(tt_params *ps, tt_gradcheck_fn f, void *ctx, const char *label,
                      uint64_t seed)
{
    tt_test_graph t;
    tt_test_graph_init(&t, 8 << 20, seed);
    tt_var *in[MAX_INPUTS];
    int64_t total = 0;
    ck_assert_int_le(ps->n, MAX_INPUTS);
    for (int i = 0; i < ps->n; i++) {
        in[i] = &ps->items[i]->var;
        total += in[i]->val.n;
    }
    tt_gradcheck_report rep;
    bool ok = tt_gradcheck(&t.g, f, ctx, in, ps->n, TT_GRADCHECK_DEFAULTS, &rep);
    ck_assert_msg(ok, "%s: %s", label, rep.message);
    ck_assert_msg(rep.checked == total, "%s: checked %lld of %lld", label,
                  (long long)rep.checked, (long long)total);
    tt_test_graph_free(&t);
}

/* --- fused attention --- */

enum { GB = 2, GT = 4, GD = 4, GH = 2 };
static const int32_t GPAD[GB * GT] = {0, 0, 0, 1, 0, 0, 1, 1};

typedef struct sdpa_ctx {
    tt_sdpa_opts o;
    tt_tensor pad;
    bool packed;
} sdpa_ctx;

static tt_var *f_sdpa(tt_graph *g, tt_var **x, void *ctx)
{
    const sdpa_ctx *c = ctx;
    if (c->packed) return tt_sdpa_packed(g, x[0], GH, &c->o, NULL);
    return tt_sdpa(g, x[0], x[1], x[2], GH, &c->o, NULL);
}

START_TEST(test_gc_sdpa_all_combinations)
{
    for (int n = 0; n < TT_SDPA_COMBOS; n++) {
        sdpa_ctx c = {.pad = tt_tensor_view((void *)GPAD, tt_shape2(GB, GT), TT_I32, TT_CPU)};
        char label[96];
        c.o = tt_test_sdpa_combo(n, GD / GH, &c.pad, label, sizeof label);
        tt_params ps;
        tt_params_init(&ps, TT_CPU);
        tt_params_add(&ps, "q", tt_shape3(GB, GT, GD));
        tt_params_add(&ps, "k", tt_shape3(GB, GT, GD));
        tt_params_add(&ps, "v", tt_shape3(GB, GT, GD));
        tt_params_finalize(&ps);
        tt_test_normal(ps.data, ps.numel, 100 + n);
        check_all(&ps, f_sdpa, &c, label, 50 + n);
        tt_params_free(&ps);
    }
}
END_TEST

START_TEST(test_gc_sdpa_packed)
{
    sdpa_ctx c = {.pad = tt_tensor_view((void *)GPAD, tt_shape2(GB, GT), TT_I32, TT_CPU),
                  .packed = true};
    c.o = (tt_sdpa_opts){.scale = R(0.6), .causal = true, .pad = &c.pad, .dropout = R(0.2)};
    tt_params ps;
    tt_params_init(&ps, TT_CPU);
    tt_params_add(&ps, "qkv", tt_shape3(GB, GT, 3 * GD));
    tt_params_finalize(&ps);
    tt_test_normal(ps.data, ps.numel, 7);
    check_all(&ps, f_sdpa, &c, "sdpa packed", 7);
    tt_params_free(&ps);
}
END_TEST

/* --- layers: each context holds the layer; the input x is the table's last parameter --- */

typedef struct layer_ctx {
    tt_params ps;
    tt_nn_mha mha;
    tt_nn_layernorm ln;
    tt_nn_ffn ffn;
    tt_nn_posenc pos;
    tt_nn_encoder_layer enc;
    tt_tensor pad;
    int which;
    tt_var *x;
} layer_ctx;

enum { L_MHA, L_LN, L_FFN, L_POS, L_ENC };

static tt_var *f_layer(tt_graph *g, tt_var **in, void *ctx)
{
    layer_ctx *c = ctx;
    (void)in;
    switch (c->which) {
    case L_MHA: return tt_nn_mha_forward(g, &c->mha, c->x, &c->pad, NULL);
    case L_LN: return tt_nn_layernorm_forward(g, &c->ln, c->x);
    case L_FFN: return tt_nn_ffn_forward(g, &c->ffn, c->x);
    case L_POS: return tt_nn_posenc_forward(g, &c->pos, c->x);
    default: return tt_nn_encoder_layer_forward(g, &c->enc, c->x, &c->pad, NULL);
    }
}

static layer_ctx layer_begin(int which)
{
    layer_ctx c = {.which = which};
    tt_params_init(&c.ps, TT_CPU);
    return c;
}

/* Adds the input x to the layer's parameters, checks them all, and frees the layer. */
static void check_layer(layer_ctx *c, const char *label, uint64_t seed)
{
    c->x = tt_params_add(&c->ps, "x", tt_shape3(GB, GT, GD));
    tt_params_finalize(&c->ps);
    tt_test_normal(c->ps.data, c->ps.numel, seed);
    c->pad = tt_tensor_view((void *)GPAD, tt_shape2(GB, GT), TT_I32, TT_CPU);
    check_all(&c->ps, f_layer, c, label, seed);
    tt_nn_posenc_free(&c->pos);
    tt_params_free(&c->ps);
}

START_TEST(test_gc_mha)
{
    for (int k = 0; k < 2; k++) {
        layer_ctx c = layer_begin(L_MHA);
        tt_nn_mha_init(&c.mha, &c.ps, "self_attn", GD, GH, k ? TT_SCALE_NONE : TT_SCALE_SQRT_DK,
                       k ? R(2) : R(1), k, R(0.2));
        check_layer(&c, k ? "mha causal unscaled tau=2" : "mha", 11 + k);
    }
}
END_TEST

START_TEST(test_gc_layernorm_layer)
{
    layer_ctx c = layer_begin(L_LN);
    tt_nn_layernorm_init(&c.ln, &c.ps, "norm", GD);
    check_layer(&c, "layernorm", 13);
}
END_TEST

START_TEST(test_gc_ffn)
{
    for (int act = 0; act < 2; act++) {
        layer_ctx c = layer_begin(L_FFN);
        tt_nn_ffn_init(&c.ffn, &c.ps, "layer", GD, 7, act ? TT_ACT_GELU : TT_ACT_RELU, R(0.2));
        check_layer(&c, act ? "ffn gelu" : "ffn relu", 14 + act);
    }
}
END_TEST

START_TEST(test_gc_positional)
{
    for (int k = 0; k < 2; k++) {
        layer_ctx c = layer_begin(L_POS);
        tt_nn_posenc_init(&c.pos, &c.ps, "pos_embed", k ? TT_POS_LEARNED : TT_POS_SINUSOIDAL,
                          GT + 2, GD);
        check_layer(&c, k ? "learned positions" : "sinusoidal positions", 16 + k);
    }
}
END_TEST

START_TEST(test_gc_encoder_layer)
{
    for (int pre = 0; pre < 2; pre++) {
        layer_ctx c = layer_begin(L_ENC);
        tt_nn_layer_config lc = {.C = GD, .n_heads = GH, .d_ff = 6, .act = TT_ACT_GELU,
                                 .pre_norm = pre, .dropout = R(0.1), .attn_dropout = R(0.1),
                                 .scale = TT_SCALE_SQRT_DK, .temperature = R(1),
                                 .causal = pre};
        tt_nn_encoder_layer_init(&c.enc, &c.ps, "encoder.layers.0", &lc);
        check_layer(&c, pre ? "encoder layer pre-LN" : "encoder layer post-LN", 18 + pre);
    }
}
END_TEST

/* --- the whole model: cross-entropy loss against every parameter --- */

typedef struct model_ctx {
    tt_model m;
    tt_tensor pad;
} model_ctx;

static tt_var *f_model_loss(tt_graph *g, tt_var **in, void *ctx)
{
    static const int32_t tokens[GB * GT] = {1, 4, 6, 0, 2, 2, 0, 0};
    static const int32_t targets[GB * GT] = {0, 2, 1, TT_IGNORE_INDEX, 1, TT_IGNORE_INDEX,
                                             TT_IGNORE_INDEX, TT_IGNORE_INDEX};
    model_ctx *c = ctx;
    (void)in;
    tt_var *tok = tt_var_from_host(g, tt_shape2(GB, GT), TT_I32, tokens, false);
    tt_var *logits = tt_model_forward(g, &c->m, tok, &c->pad, NULL);
    return tt_cross_entropy(g, logits, tt_var_from_host(g, tt_shape2(GB, GT), TT_I32, targets,
                                                        false));
}

START_TEST(test_gc_model_loss)
{
    for (int k = 0; k < 2; k++) {
        model_ctx c = {.pad = tt_tensor_view((void *)GPAD, tt_shape2(GB, GT), TT_I32, TT_CPU)};
        tt_model_config cfg = tiny_config();
        if (k) { /* the other half of every choice, with dropout everywhere */
            cfg.activation = TT_ACT_RELU, cfg.pre_norm = true, cfg.positional = TT_POS_SINUSOIDAL;
            cfg.embed_scale = false, cfg.attn_scale = TT_SCALE_NONE, cfg.causal = true;
            cfg.attn_temperature = R(0.5), cfg.dropout = R(0.1), cfg.attn_dropout = R(0.2);
        }
        tt_model_init(&c.m, &cfg, TT_CPU);
        /* random LayerNorm weights and biases too, so no gradient is checked only at 1 and 0 */
        tt_test_normal(c.m.params.data, c.m.params.numel, 30 + k);
        check_all(&c.m.params, f_model_loss, &c, k ? "model pre-LN relu sinusoidal causal "
                  "unscaled tau=0.5 dropout" : "model post-LN gelu learned", 40 + k);
        tt_model_free(&c.m);
    }
}
END_TEST

#endif /* TT_DOUBLE */

Suite *nn_suite(void)
{
    Suite *s = suite_create("nn");
    TCase *tc = tcase_create("layers");
    tcase_add_test(tc, test_param_names_and_order);
    tcase_add_test(tc, test_init_follows_pytorch);
    tcase_add_test(tc, test_sinusoid_table);
    tcase_add_test(tc, test_learned_positions_gradient);
    tcase_add_test(tc, test_fused_dropouts_equal_unfused);
    suite_add_tcase(s, tc);
#ifdef TT_DOUBLE
    tc = tcase_create("gradcheck");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_gc_sdpa_all_combinations);
    tcase_add_test(tc, test_gc_sdpa_packed);
    tcase_add_test(tc, test_gc_mha);
    tcase_add_test(tc, test_gc_layernorm_layer);
    tcase_add_test(tc, test_gc_ffn);
    tcase_add_test(tc, test_gc_positional);
    tcase_add_test(tc, test_gc_encoder_layer);
    tcase_add_test(tc, test_gc_model_loss);
    suite_add_tcase(s, tc);
#endif
    return s;
}
