/* test_parity.c: the whole model against stock PyTorch. Each tests/fixtures/parity_*.safetensors
 * (written by tests/make_fixtures.py with torch.nn.TransformerEncoder, computed in float64 from
 * float32 parameters) is read with our own safetensors reader; its parameters are loaded into a
 * model built from its config, and one forward and backward pass must reproduce the logits, the
 * loss, every layer's attention weights and every parameter's gradient: relative error
 * |ours - ref| / |ref| (2-norms) at most 1e-4 in float32 and 1e-12 in float64.
 * With TT_PARITY_EXPORT=DIR set, each model's parameters are also written to DIR/<name>
 * .safetensors under their plain names, for `tests/make_fixtures.py --check-load DIR`, which
 * loads them into the stock model with load_state_dict(strict=True). */
#include "testutil.h"

#include "nn/model.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TT_DOUBLE
#define PARITY_TOL 1e-12
#else
#define PARITY_TOL 1e-4
#endif

#define MAX_FIXTURES 32
#define ERR_LEN 512

static const char *fixture_dir(void)
{
    const char *d = getenv("TT_FIXTURES");
    return d ? d : "tests/fixtures";
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted paths of the parity fixtures; malloc'ed strings. */
static int list_fixtures(char *paths[MAX_FIXTURES])
{
    DIR *d = opendir(fixture_dir());
    ck_assert_msg(d, "cannot open %s (run the tests from the repository root)", fixture_dir());
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "parity_", 7) || len < 12 ||
            strcmp(e->d_name + len - 12, ".safetensors"))
            continue;
        ck_assert_int_lt(n, MAX_FIXTURES);
        paths[n] = tt_xmalloc(strlen(fixture_dir()) + len + 2);
        sprintf(paths[n], "%s/%s", fixture_dir(), e->d_name);
        n++;
    }
    closedir(d);
    qsort(paths, (size_t)n, sizeof *paths, cmp_str);
    return n;
}

static int json_int(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsNumber(v), "config key %s missing", key);
    return v->valueint;
}

static const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsString(v), "config key %s missing", key);
    return v->valuestring;
}

static bool json_bool(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsBool(v), "config key %s missing", key);
    return cJSON_IsTrue(v);
}

static tt_model_config parse_config(const char *json)
{
    cJSON *o = cJSON_Parse(json);
    ck_assert_msg(o, "fixture config is not JSON");
    const cJSON *temp = cJSON_GetObjectItemCaseSensitive(o, "attn_temperature");
    ck_assert(cJSON_IsNumber(temp));
    tt_model_config c = {
        .vocab = json_int(o, "vocab"), .n_out = json_int(o, "n_out"),
        .d_model = json_int(o, "d_model"), .n_heads = json_int(o, "n_heads"),
        .n_layers = json_int(o, "n_layers"), .d_ff = json_int(o, "d_ff"),
        .max_len = json_int(o, "max_len"),
        .activation = strcmp(json_str(o, "activation"), "gelu") ? TT_ACT_RELU : TT_ACT_GELU,
        .pre_norm = strcmp(json_str(o, "norm"), "pre") == 0,
        .positional = strcmp(json_str(o, "positional"), "learned") ? TT_POS_SINUSOIDAL
                                                                   : TT_POS_LEARNED,
        .embed_scale = json_bool(o, "embed_scale"),
        .attn_scale = strcmp(json_str(o, "attn_scale"), "none") ? TT_SCALE_SQRT_DK : TT_SCALE_NONE,
        .attn_temperature = (real)temp->valuedouble, .causal = json_bool(o, "causal")};
    ck_assert_str_eq(json_str(o, "norm"), c.pre_norm ? "pre" : "post");
    cJSON_Delete(o);
    return c;
}

/* A reference tensor as real, checked to hold n elements. malloc'ed. */
static real *ref_tensor(const tt_st_file *f, const char *name, int64_t n)
{
    const tt_st_entry *e = tt_st_find(f, name);
    ck_assert_msg(e, "fixture has no %s", name);
    real *x = tt_test_alloc(n);
    char err[ERR_LEN];
    ck_assert_msg(tt_st_read_real(e, x, n, err, sizeof err) == 0, "%s", err);
    return x;
}


typedef struct worst {
    double err;
    char what[128];
} worst;

static void compare(worst *wst, const char *fixture, const char *what, const real *got,
                    const real *want, int64_t n)
{
    double e = tt_rel_err(got, want, n);
    ck_assert_msg(e <= PARITY_TOL, "%s: %s relative error %.3g > %.0e", fixture, what, e,
                  PARITY_TOL);
    if (e >= wst->err) {
        wst->err = e;
        snprintf(wst->what, sizeof wst->what, "%s", what);
    }
}

static void export_params(const tt_model *m, const tt_st_file *f, const char *name)
{
    const char *dir = getenv("TT_PARITY_EXPORT");
    if (!dir) return;
    char path[1024], err[ERR_LEN];
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, name);
    tt_st_writer w;
    tt_st_writer_init(&w);
    tt_params_write(&m->params, m->params.data, &w, ""); /* CPU: host memory */
    tt_st_writer_meta(&w, "config", tt_st_meta(f, "config"));
    tt_st_writer_meta(&w, "fixture", name);
    ck_assert_msg(tt_st_writer_save(&w, path, err, sizeof err) == 0, "%s", err);
    tt_st_writer_free(&w);
}

static worst check_fixture(const char *path, char *name_out, size_t name_len)
{
    char err[ERR_LEN];
    tt_st_file f;
    ck_assert_msg(tt_st_load(&f, path, err, sizeof err) == 0, "%s", err);
    const char *name = tt_st_meta(&f, "name"), *cfg_json = tt_st_meta(&f, "config");
    ck_assert_msg(name && cfg_json, "%s: metadata lacks name or config", path);
    snprintf(name_out, name_len, "%s", name);
    int B = atoi(tt_st_meta(&f, "batch")), T = atoi(tt_st_meta(&f, "seq_len"));
    bool padding = strcmp(tt_st_meta(&f, "padding"), "true") == 0;
    tt_model_config cfg = parse_config(cfg_json);

    tt_model m;
    tt_model_init(&m, &cfg, TT_CPU);
    ck_assert_msg(tt_params_load(&m.params, NULL, &f, "param.", true, err, sizeof err) == 0,
                  "%s: %s", name, err);
    export_params(&m, &f, name);

    int32_t *tokens = tt_xmalloc((size_t)B * T * sizeof(int32_t));
    int32_t *targets = tt_xmalloc((size_t)B * T * sizeof(int32_t));
    int32_t *pad = tt_xmalloc((size_t)B * T * sizeof(int32_t));
    const char *ids[3] = {"input.tokens", "input.targets", "input.pad_mask"};
    int32_t *dst[3] = {tokens, targets, pad};
    for (int i = 0; i < 3; i++) {
        const tt_st_entry *e = tt_st_find(&f, ids[i]);
        ck_assert_msg(e, "%s: no %s", name, ids[i]);
        ck_assert_msg(tt_st_read_i32(e, dst[i], (int64_t)B * T, err, sizeof err) == 0, "%s", err);
    }

    tt_test_graph t;
    tt_test_graph_init(&t, 16 << 20, 1);
    tt_graph *g = &t.g;
    tt_tensor padt = tt_tensor_view(pad, tt_shape2(B, T), TT_I32, TT_CPU);
    tt_tensor att[16];
    ck_assert_int_le(cfg.n_layers, 16);
    tt_var *tok = tt_var_from_host(g, tt_shape2(B, T), TT_I32, tokens, false);
    tt_var *logits = tt_model_forward(g, &m, tok, padding ? &padt : NULL, att);
    tt_var *loss = tt_cross_entropy(g, logits, tt_var_from_host(g, tt_shape2(B, T), TT_I32,
                                                                targets, false));
    tt_params_zero_grad(&m.params);
    tt_backward(g, loss);

    worst wst = {0};
    int64_t nl = (int64_t)B * T * cfg.n_out;
    real *want = ref_tensor(&f, "output.logits", nl);
    compare(&wst, name, "logits", logits->val.data, want, nl);
    free(want);
    want = ref_tensor(&f, "output.loss", 1);
    compare(&wst, name, "loss", loss->val.data, want, 1);
    free(want);
    char key[TT_PARAM_NAME + 16];
    for (int l = 0; l < cfg.n_layers; l++) {
        snprintf(key, sizeof key, "output.attn.%d", l);
        want = ref_tensor(&f, key, att[l].n);
        ck_assert_int_eq(att[l].n, (int64_t)B * cfg.n_heads * T * T);
        compare(&wst, name, key, att[l].data, want, att[l].n);
        free(want);
    }
    for (int i = 0; i < m.params.n; i++) {
        const tt_param *p = m.params.items[i];
        snprintf(key, sizeof key, "grad.%s", p->name);
        want = ref_tensor(&f, key, p->var.val.n);
        compare(&wst, name, key, p->var.grad.data, want, p->var.val.n);
        free(want);
    }
    free(tokens);
    free(targets);
    free(pad);
    tt_test_graph_free(&t);
    tt_model_free(&m);
    tt_st_close(&f);
    return wst;
}

START_TEST(test_parity_with_pytorch)
{
    char *paths[MAX_FIXTURES];
    int n = list_fixtures(paths);
    ck_assert_msg(n >= 7, "found %d parity fixtures in %s, expected at least 7", n,
                  fixture_dir());
    printf("  parity with PyTorch (%s): worst relative error per configuration\n",
           TT_REAL_NAME);
    for (int i = 0; i < n; i++) {
        char name[128];
        worst w = check_fixture(paths[i], name, sizeof name);
        printf("    %-34s %.2e  (%s)\n", name, w.err, w.what);
        free(paths[i]);
    }
}
END_TEST

/* Loading is strict and all-or-nothing: a missing tensor, a wrong shape or an extra tensor
 * under the prefix is refused with its name, and the parameters stay as they were. */
START_TEST(test_params_load_rejects_mismatch)
{
    char *paths[MAX_FIXTURES];
    int n = list_fixtures(paths);
    ck_assert_int_ge(n, 1);
    char err[ERR_LEN];
    tt_st_file f;
    /* the last in name order, parity_pre_relu_pad_sin_none_t2, has 3 layers */
    ck_assert_msg(tt_st_load(&f, paths[n - 1], err, sizeof err) == 0, "%s", err);
    tt_model_config cfg = parse_config(tt_st_meta(&f, "config"));
    tt_model m;

    cfg.d_ff += 1; /* every linear1/linear2 has the wrong shape */
    tt_model_init(&m, &cfg, TT_CPU);
    tt_model_reset(&m, 5);
    real first = m.params.data[0];
    ck_assert_int_eq(tt_params_load(&m.params, NULL, &f, "param.", true, err, sizeof err),
                     -1);
    ck_assert_msg(strstr(err, "linear1.weight") && strstr(err, "shape"), "message: %s", err);
    ck_assert(m.params.data[0] == first);
    tt_model_free(&m);

    cfg.d_ff -= 1; /* one layer more than the file has */
    cfg.n_layers += 1;
    tt_model_init(&m, &cfg, TT_CPU);
    ck_assert_int_eq(tt_params_load(&m.params, NULL, &f, "param.", true, err, sizeof err),
                     -1);
    ck_assert_msg(strstr(err, "missing") && strstr(err, "layers."), "message: %s", err);
    tt_model_free(&m);

    cfg.n_layers -= 2; /* one fewer: strict refuses the extra tensors, non-strict takes it */
    ck_assert_int_ge(cfg.n_layers, 1);
    {
        tt_model_init(&m, &cfg, TT_CPU);
        ck_assert_int_eq(tt_params_load(&m.params, NULL, &f, "param.", true, err, sizeof err),
                     -1);
        ck_assert_msg(strstr(err, "not a parameter"), "message: %s", err);
        ck_assert_int_eq(tt_params_load(&m.params, NULL, &f, "param.", false, err, sizeof err),
                         0);
        tt_model_free(&m);
    }
    tt_st_close(&f);
    for (int i = 0; i < n; i++) free(paths[i]);
}
END_TEST

Suite *parity_suite(void)
{
    Suite *s = suite_create("parity");
    TCase *tc = tcase_create("pytorch");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_parity_with_pytorch);
    tcase_add_test(tc, test_params_load_rejects_mismatch);
    suite_add_tcase(s, tc);
    return s;
}
