/* config_json.c: the config's schema, its writing and a check of its text. tt_config_keys lists
 * every key with its type, its field in tt_config, its default and what is allowed (config.c
 * reads and checks each key through it); tt_config_store and tt_config_fetch move a value in
 * and out of a key's field; tt_config_to_json walks the table to write a resolved config back
 * as JSON (every key with a value; tt_config_absent says which have none), numbers printed so
 * that they read back exactly. A key added to the table is read, checked and written back.
 * tt_json_nul_path finds a \u0000 escape, which cJSON decodes into a NUL that would cut a
 * string short. */
#include "train/config/config_keys.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clang-format off */
#define F(field) offsetof(tt_config, field), sizeof(((tt_config *)0)->field)
#define INT(s, n, fld, a, d, txt)                                                                  \
    {s, n, T_INT, F(fld), .lo = a, .hi = INT_MAX, .def = d, .doc = txt}
#define NUM(s, n, fld, a, ao, b, bo, d, txt)                                                       \
    {s, n, T_NUM, F(fld), .lo = a, .lo_open = ao, .hi = b, .hi_open = bo, .def = d, .doc = txt}
#define BOOL(s, n, fld, d, txt) {s, n, T_BOOL, F(fld), .def = d, .doc = txt}
#define ENUM(s, n, fld, txt, ...) {s, n, T_ENUM, F(fld), .names = {__VA_ARGS__}, .doc = txt}
#define PATH(s, n, fld, d, txt) {s, n, T_PATH, F(fld), .sdef = d, .doc = txt}
#define STRS(s, n, fld, cnt, txt)                                                                  \
    {s, n, T_STRS, F(fld), .count_off = offsetof(tt_config, cnt), .doc = txt}
#define OPEN true
#define SHUT false
/* clang-format on */

/* Every key, in the order tt_config_to_json writes them, with the line of meaning that
 * docs/config.md shows (make docs writes it from this table: tt_config_reference). */
const tt_config_key tt_config_keys[] = {
    {NULL, "seed", T_I64, F(seed), .lo = 0, .hi = 9007199254740991.0 /* 2^53 - 1 */,
     .allowed = "0 <= seed < 2^53",
     .doc = "initial values, dropout, shuffling, mlm masks and `data.valid_share`'s split"},
    ENUM(NULL, "device", device,
         "where the run computes: `\"cuda\"` needs a `make CUDA=1` build and a GPU (else an "
         "error with a hint); `\"guard\"` is the tests' device, the CPU's kernels behind memory "
         "the host cannot touch outside a kernel call (same results, slower)",
         "cpu", "cuda", "guard"),
    INT(NULL, "threads", threads, 0, 0, "threads of the kernels and OpenBLAS; 0: every core"),
    ENUM(NULL, "matmul_precision", matmul_high,
         "`\"high\"` lets a GPU's gemms use TF32 tensor cores (PyTorch's name for the same "
         "choice; the fused attention stays on the float cores); the CPU ignores it and says so",
         "highest", "high"),
    BOOL(NULL, "cuda_graphs", cuda_graphs, true,
         "on `\"cuda\"`: the second training step is captured as a CUDA graph that later steps "
         "replay (the same results; a data-parallel run launches its kernels); `false` launches "
         "every kernel, for debugging; no effect on other devices"),
    {"data", "task", T_ENUM, F(data.task), .names = {"tag", "classify", "mlm", "lm"},
     .flags = REQUIRED,
     .doc = "what the model learns: a tag per word, a label per line, masked words (mlm) or the "
            "next word (lm, causal); the data formats: docs/design.md section 4"},
    PATH("data", "train", data.train, "train.txt",
         "the training file, relative to the config file's folder"),
    PATH("data", "valid", data.valid, "valid.txt",
         "the validation file, relative to the config file's folder; not with "
         "`data.valid_share` (`--set data.valid=null` drops a config's)"),
    {"data", "valid_share", T_NUM, F(data.valid_share), .lo = 0, .lo_open = true, .hi = 0.5,
     .flags = OPTIONAL,
     .doc = "instead of a validation file, that share of `data.train`'s examples (rounded, at "
            "least one in each part) drawn by `seed`; the vocabulary comes from the training "
            "part, tags and labels from the whole file"},
    {"data", "seq_len", T_INT, F(data.seq_len), .lo = 1, .hi = 4096, .flags = REQUIRED,
     .doc = "T of every batch; a longer line is an error unless `data.truncate`"},
    STRS("data", "probes", data.probes, data.n_probes,
         "sentences whose attention maps are dumped (`attention/`), each of at least one word"),
    STRS("data", "ambiguous", data.ambiguous, data.n_ambiguous,
         "words that must occur in the training data; tag: `valid_acc_ambiguous` is the "
         "accuracy on them"),
    BOOL("data", "truncate", data.truncate, false,
         "cut lines longer than `seq_len` instead of stopping (the run reports how many)"),
    NUM("data", "mask_prob", data.mask_prob, 0, OPEN, 1, OPEN, 0.15,
        "mlm: the share of tokens replaced by `[MASK]`"),
    INT("model", "d_model", model.d_model, 1, 64,
        "the width of every token's vector; divisible by `n_heads`"),
    INT("model", "n_heads", model.n_heads, 1, 4,
        "attention heads per layer (d_k = d_model / n_heads)"),
    INT("model", "n_layers", model.n_layers, 1, 2, "encoder layers"),
    INT("model", "d_ff", model.d_ff, 1, 256, "the feed-forward block's inner width"),
    {"model", "max_len", T_INT, F(model.max_len), .lo = 1, .hi = INT_MAX, .flags = DERIVED,
     .dflt = "`data.seq_len`", .allowed = ">= `data.seq_len`", .doc = "rows of the position table"},
    ENUM("model", "activation", model.gelu, "the feed-forward activation (GELU: the erf form)",
         "relu", "gelu"),
    ENUM("model", "norm", model.pre_norm,
         "LayerNorm after each residual add (post, the original Transformer's) or before each "
         "block (pre, which adds a last `encoder.norm`)",
         "post", "pre"),
    ENUM("model", "positional", model.learned_pos,
         "fixed sinusoidal positions, or a learned table of `max_len` rows", "sinusoidal",
         "learned"),
    BOOL("model", "embed_scale", model.embed_scale, false,
         "multiply the embeddings by sqrt(d_model)"),
    NUM("model", "dropout", model.dropout, 0, SHUT, 1, OPEN, 0.1,
        "embedding, residual and feed-forward dropout"),
    NUM("model", "attn_dropout", model.attn_dropout, 0, SHUT, 1, OPEN, 0.0,
        "dropout on the attention weights"),
    ENUM("model", "attn_scale", model.attn_scale_none,
         "divide the attention scores by sqrt(d_k), or not (what the scaling study compares)",
         "sqrt_dk", "none"),
    /* tau divides the scores, s = q.k / (tau sqrt(d_k)) (or q.k / tau), in float32: FLT_MAX
     * 3.4e38, smallest normal 1.2e-38. [1e-20, 1e20] keeps 18 decades of room at each end.
     * At 1e-20 the scale is at most 1e20: a score overflows only for |q.k| > 3.4e18, and so
     * does dQ = scale dS K only for |dS K| that large (dS = P (dP - rowsum(dP P)) is of the
     * size of dP); q and k come out of normalised rows through weights of size 1/sqrt(C), so
     * |q.k| stays decades below that. The softmax subtracts the row's max, so a row that
     * saturates to one-hot stays exact. Smaller, the room goes: at 1.2e-38 (d_k 16) a |q.k|
     * of 17 overflows, and configs/tiny.json's first loss is NaN. At 1e20 the scale is at
     * least 1e-20 / sqrt(d_k), a normal float; the scores are ~1e-20, so the softmax is uniform
     * as the exact one is to within float32's rounding, and dQ keeps its relative precision
     * (a normal float) for |dS K| > 1.2e-18 sqrt(d_k). Larger, tau sqrt(d_k) heads for FLT_MAX
     * and the scale for 0. The bounds are compared in float32 too (float_problem), where
     * 1e-20 is 9.99999968e-21. */
    {"model", "attn_temperature", T_NUM, F(model.attn_temperature), .lo = 1e-20, .hi = 1e20,
     .def = 1.0,
     .why = "the attention scores are divided by it in float32: past this range they or their "
            "gradients overflow or underflow",
     .doc = "the attention scores are divided by it too; past its range the float32 scores or "
            "their gradients overflow or underflow"},
    {"model", "causal", T_BOOL, F(model.causal), .flags = DERIVED,
     .dflt = "true for `lm`, else false",
     .doc = "each position attends to itself and earlier ones only; `lm` requires true"},
    ENUM("model", "pool", model.pool,
         "classify: what the head reads, the mean over the real tokens or the first token", "mean",
         "first"),
    INT("train", "epochs", train.epochs, 1, 10, "passes over the training data"),
    INT("train", "batch_size", train.batch_size, 1, 32, "examples per step"),
    INT("train", "warmup_steps", train.warmup_steps, 0, 0,
        "linear warm-up before the schedule: lr (k+1) / warmup_steps at step k"),
    ENUM("train", "optimizer", train.optimizer,
         "PyTorch's update rules (`src/train/optim/optim.h`): AdamW without amsgrad; SGD with "
         "momentum, no dampening or Nesterov",
         "adamw", "sgd"),
    NUM("train", "lr", train.lr, 0, OPEN, HUGE_VAL, SHUT, 1e-3,
        "the learning rate (a normal float32)"),
    NUM("train", "beta1", train.beta1, 0, SHUT, 1, OPEN, 0.9, "AdamW's first-moment decay"),
    NUM("train", "beta2", train.beta2, 0, SHUT, 1, OPEN, 0.999, "AdamW's second-moment decay"),
    NUM("train", "eps", train.eps, 0, OPEN, HUGE_VAL, SHUT, 1e-8,
        "AdamW's term in the denominator (a normal float32)"),
    NUM("train", "weight_decay", train.weight_decay, 0, SHUT, HUGE_VAL, SHUT, 0.01,
        "AdamW: decoupled; SGD: L2; on every parameter"),
    NUM("train", "momentum", train.momentum, 0, SHUT, 1, OPEN, 0.9, "SGD's momentum"),
    NUM("train", "grad_clip", train.grad_clip, 0, SHUT, HUGE_VAL, SHUT, 1.0,
        "the largest global gradient norm, as `clip_grad_norm_` (0: no clipping)"),
    ENUM("train", "schedule", train.schedule,
         "the rate after warm-up: constant, or decayed to 0 at the schedule's last step "
         "linearly or along a cosine",
         "constant", "linear", "cosine"),
    {"train", "schedule_epochs", T_INT, F(train.schedule_epochs), .lo = 1, .hi = INT_MAX,
     .flags = DERIVED, .dflt = "`train.epochs`",
     .doc = "the epochs the schedule spans, warm-up included; later steps keep its last rate. "
            "On `--resume`, unless given, the checkpoint's"},
    {"output", "dir", T_STR, F(output.dir), .flags = DERIVED,
     .dflt = "`\"runs/<config file name>\"`",
     .doc = "the run folder, relative to the current directory (created)"},
    INT("output", "attention_every", output.attention_every, 0, 1,
        "epochs between attention dumps (0: none)"),
    INT("output", "checkpoint_every", output.checkpoint_every, 0, 0,
        "epochs between checkpoints (0: only after the last)"),
    INT("output", "log_every", output.log_every, 1, 1,
        "steps between training lines of `metrics.jsonl`"),
    ENUM("study", "kind", study.kind, "`\"scaling\"` runs the scaling study instead of training",
         "none", "scaling"),
    INT("study", "samples", study.samples, 1000, 10000, "draws per d_k in the study's parts 1-3"),
    INT("study", "d_model", study.d_model, 1, 256,
        "the width of part 4's model; divisible by `study.n_heads`"),
    INT("study", "n_heads", study.n_heads, 1, 4,
        "the heads of part 4's model (d_k = `study.d_model` / `study.n_heads`)"),
    INT("study", "epochs", study.epochs, 1, 3, "epochs of each of part 4's trainings"),
    INT("study", "seeds", study.seeds, 1, 5,
        "part 4 trains both variants with seeds `seed` to `seed + seeds - 1`; its verdicts hold "
        "only when they hold for every seed"),
};
_Static_assert(sizeof tt_config_keys / sizeof tt_config_keys[0] == TT_CONFIG_N_KEYS,
               "TT_CONFIG_N_KEYS (config_keys.h) must count the keys of tt_config_keys");

void tt_config_store(tt_config *c, const tt_config_key *k, double d)
{
    void *p = tt_config_field(c, k);
    /* (int)d only for int and enum keys, whose range is checked: a double past INT_MAX (a
     * learning rate of 3e14, a seed of 2^40) converted to int is undefined behaviour */
    if (k->type == T_INT) {
        *(int *)p = (int)d;
    } else if (k->type == T_I64) {
        *(int64_t *)p = (int64_t)d;
    } else if (k->type == T_NUM) {
        *(double *)p = d;
    } else if (k->size == sizeof(bool)) {
        *(bool *)p = d != 0;
    } else {
        int i = (int)d;
        TT_ASSERT(k->type == T_ENUM && k->size == sizeof i);
        memcpy(p, &i, sizeof i);
    }
}

double tt_config_fetch(const tt_config *c, const tt_config_key *k)
{
    const char *p = (const char *)c + k->off;
    if (k->type == T_I64) return (double)*(const int64_t *)p;
    if (k->type == T_NUM) return *(const double *)p;
    if (k->type != T_INT && k->size == sizeof(bool)) return *(const bool *)p;
    int i;
    memcpy(&i, p, sizeof i);
    return i;
}

bool tt_config_absent(const tt_config *c, const tt_config_key *k)
{
    if (k->type == T_STR || k->type == T_PATH) return ((const char *)c + k->off)[0] == '\0';
    return (k->flags & OPTIONAL) && tt_config_fetch(c, k) == 0;
}

const char *tt_config_number_text(double d, char *buf, size_t len)
{
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, d);
        if (strtod(buf, NULL) == d) break;
    }
    return buf;
}

static cJSON *key_to_json(const tt_config *c, const tt_config_key *k)
{
    const char *p = (const char *)c + k->off;
    if (k->type == T_STR || k->type == T_PATH) return cJSON_CreateString(p);
    if (k->type == T_BOOL) return cJSON_CreateBool(tt_config_fetch(c, k) != 0);
    if (k->type == T_ENUM) return cJSON_CreateString(k->names[(int)tt_config_fetch(c, k)]);
    char num[32];
    if (k->type != T_STRS)
        return cJSON_CreateRaw(tt_config_number_text(tt_config_fetch(c, k), num, sizeof num));
    char *const *strs = *(char *const *const *)p;
    int n = *(const int *)((const char *)c + k->count_off);
    return strs ? cJSON_CreateStringArray((const char *const *)strs, n) : cJSON_CreateArray();
}

char *tt_config_to_json(const tt_config *c)
{
    cJSON *root = cJSON_CreateObject();
    TT_ASSERT(root);
    for (int k = 0; k < TT_CONFIG_N_KEYS; k++) {
        const tt_config_key *kd = &tt_config_keys[k];
        if (tt_config_absent(c, kd)) continue;
        cJSON *parent = root;
        if (kd->section) {
            parent = cJSON_GetObjectItemCaseSensitive(root, kd->section);
            if (!parent) parent = cJSON_AddObjectToObject(root, kd->section);
        }
        cJSON *v = key_to_json(c, kd);
        TT_ASSERT(parent && v);
        cJSON_AddItemToObject(parent, kd->name, v);
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    TT_ASSERT(s);
    return s;
}

/* The reference's cells for key k: its type and its default (what is allowed: the words of the
 * reader's messages, tt_config_allowed). */
static const char *ref_type(const tt_config_key *k)
{
    static const char *const names[] = {
        [T_INT] = "integer", [T_I64] = "integer", [T_NUM] = "number", [T_BOOL] = "bool",
        [T_ENUM] = "string", [T_STR] = "string",  [T_PATH] = "path",  [T_STRS] = "list of strings"};
    return names[k->type];
}

static void ref_default(const tt_config_key *k, char *buf, size_t len)
{
    char num[32];
    if (k->flags & REQUIRED)
        snprintf(buf, len, "required");
    else if (k->flags & OPTIONAL)
        snprintf(buf, len, "absent");
    else if (k->dflt)
        snprintf(buf, len, "%s", k->dflt);
    else if (k->type == T_BOOL)
        snprintf(buf, len, "%s", k->def != 0 ? "true" : "false");
    else if (k->type == T_ENUM)
        snprintf(buf, len, "`\"%s\"`", k->names[(int)k->def]);
    else if (k->type == T_PATH || k->type == T_STR)
        snprintf(buf, len, "`\"%s\"`", k->sdef);
    else if (k->type == T_STRS)
        snprintf(buf, len, "[]");
    else
        snprintf(buf, len, "%s", tt_config_number_text(k->def, num, sizeof num));
}

const char *tt_config_allowed(const tt_config_key *k, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    if (k->type == T_INT && k->hi == INT_MAX) {
        snprintf(buf, len, "an integer >= %.0f", k->lo);
    } else if (k->type == T_INT || k->type == T_I64) {
        snprintf(buf, len, "an integer in [%.0f, %.0f]", k->lo, k->hi);
    } else if (k->type == T_NUM && isinf(k->hi)) {
        snprintf(buf, len, "a number %s %g", k->lo_open ? ">" : ">=", k->lo);
    } else if (k->type == T_NUM) {
        snprintf(buf, len, "a number in %c%g, %g%c", k->lo_open ? '(' : '[', k->lo, k->hi,
                 k->hi_open ? ')' : ']');
    } else if (k->type == T_ENUM) {
        for (int i = 0; i < 5 && k->names[i]; i++)
            n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s\"%s\"", i ? ", " : "",
                                  k->names[i]);
    } else {
        snprintf(buf, len, "%s",
                 k->type == T_BOOL   ? "true or false"
                 : k->type == T_STRS ? "an array of non-empty strings"
                 : k->type == T_PATH ? "a file path (a non-empty string)"
                                     : "a non-empty string");
    }
    return buf;
}

size_t tt_config_reference(char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len,
                                "| key | type | default | allowed | meaning |\n"
                                "| --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < TT_CONFIG_N_KEYS; i++) {
        const tt_config_key *k = &tt_config_keys[i];
        char def[96], allowed[160];
        ref_default(k, def, sizeof def);
        if (k->allowed) snprintf(allowed, sizeof allowed, "%s", k->allowed);
        else tt_config_allowed(k, allowed, sizeof allowed);
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "| `%s%s%s` | %s | %s | %s | %s |\n",
                              k->section ? k->section : "", k->section ? "." : "", k->name,
                              ref_type(k), def, allowed, k->doc);
    }
    return n;
}

/* The number, in document order, of the first string of text (keys and values alike) that
 * holds the escape \u0000, or -1. text is valid JSON (cJSON parsed it), so a '"' outside a
 * string opens one and a backslash inside one escapes the next character. */
static int nul_string(const char *text)
{
    int count = 0;
    bool in = false;
    for (const char *p = text; *p; p++) {
        if (*p == '"') {
            count += in;
            in = !in;
        } else if (in && *p == '\\') {
            if (strncmp(p + 1, "u0000", 5) == 0) return count;
            p++; /* the escaped character: a '"' or a '\\' there ends nothing */
        }
    }
    return -1;
}

/* The path of string number *left under v (document order: a member's key, then its value),
 * appended to path[0..strlen(path)); *key: it is a key. */
static bool string_path(const cJSON *v, int *left, char *path, size_t len, bool *key)
{
    const size_t n = strlen(path);
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        if (cJSON_IsObject(v))
            snprintf(path + n, len - n, "%s%s", n ? "." : "", e->string);
        else
            snprintf(path + n, len - n, "[%d]", i);
        if (cJSON_IsObject(v) && (*left)-- == 0) {
            *key = true;
            return true;
        }
        if (cJSON_IsString(e) && (*left)-- == 0) return true;
        if ((cJSON_IsObject(e) || cJSON_IsArray(e)) && string_path(e, left, path, len, key))
            return true;
        path[n] = '\0';
    }
    return false;
}

bool tt_json_nul_path(const char *text, const cJSON *root, char *path, size_t len, bool *key)
{
    int left = nul_string(text);
    path[0] = '\0';
    *key = false;
    if (left < 0) return false;
    string_path(root, &left, path, len, key); /* not found: root itself is the string */
    return true;
}
