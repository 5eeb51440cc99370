/* bench_run.c: the run of bench_step.c (bench_run.h): a config file through the project's
 * loaders, as ./train loads it, or a named standard config: its JSON text through
 * tt_config_from_text (the same checks, --set included) and a corpus of random tokens made in
 * memory with the named vocabulary size, whose examples fill every batch (no padding; lm gets
 * T+1 words per example, so its T inputs are all real). From there tt_run_init, the step, the
 * FLOP count and the spec are one code path. */
#include "bench_run.h"

#include "train/run/budget.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The standard rows. tiny, small and medium are what the speed work was measured on since
 * issue 6 (post-LN, ReLU, sinusoidal, dropout 0.1 everywhere, bidirectional: keep them as
 * they are, RESULTS.md holds their history); the gpt rows are issue 15's GPT-style models;
 * base is issue 12's GPU row, the same kind as tiny at BERT-base's size (bench/gpu_bench.sh;
 * far too big for the CPU table). */
typedef struct named {
    const char *name;
    int V, T, d, h, L, d_ff, B;
    bool gpt; /* lm, pre-LN, GELU, learned positions, causal, no dropout */
} named;

static const named NAMED[] = {
    {"tiny", 64, 16, 64, 4, 2, 256, 32, false},
    {"small", 256, 64, 128, 4, 4, 512, 32, false},
    {"medium", 1024, 128, 256, 8, 6, 1024, 16, false},
    {"gpt-small", 256, 64, 128, 4, 4, 512, 32, true},
    {"gpt-medium", 1024, 128, 256, 8, 6, 1024, 16, true},
    {"base", 8192, 256, 768, 12, 12, 3072, 32, false},
};
#define N_NAMED ((int)(sizeof NAMED / sizeof NAMED[0]))
const char BENCH_NAMES[] = "tiny small medium gpt-small gpt-medium base";

/* Random batches per epoch of a named config: a few distinct ones to cycle through. */
enum { NAMED_BATCHES = 8 };

/* The config file a named row would be (the data keys aside): AdamW at lr 1e-3, weight decay
 * 0.01, no clipping, a constant rate, seed 1234 (the bench's since issue 6). */
static void named_json(const named *n, char *out, size_t len)
{
    snprintf(out, len,
             "{\"seed\": 1234, \"data\": {\"task\": \"%s\", \"seq_len\": %d}, "
             "\"model\": {\"d_model\": %d, \"n_heads\": %d, \"n_layers\": %d, \"d_ff\": %d, "
             "\"norm\": \"%s\", \"activation\": \"%s\", \"positional\": \"%s\", "
             "\"causal\": %s, \"dropout\": %s, \"attn_dropout\": %s}, "
             "\"train\": {\"batch_size\": %d, \"optimizer\": \"adamw\", \"lr\": 0.001, "
             "\"weight_decay\": 0.01, \"grad_clip\": 0, \"schedule\": \"constant\"}}",
             n->gpt ? "lm" : "tag", n->T, n->d, n->h, n->L, n->d_ff, n->gpt ? "pre" : "post",
             n->gpt ? "gelu" : "relu", n->gpt ? "learned" : "sinusoidal",
             n->gpt ? "true" : "false", n->gpt ? "0" : "0.1", n->gpt ? "0" : "0.1", n->B);
}

/* Deterministic xorshift64* words for the random corpus. */
static uint32_t next_word(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (uint32_t)((*s * 0x2545F4914F6CDD1Dull) >> 32);
}

static void add_names(tt_vocab *v, const char *prefix, int n)
{
    static const char *specials[TT_TOK_SPECIALS] = {"[PAD]", "[UNK]", "[MASK]"};
    char word[32];
    for (int i = 0; i < n; i++) {
        if (*prefix == 'w' && i < TT_TOK_SPECIALS) snprintf(word, sizeof word, "%s", specials[i]);
        else snprintf(word, sizeof word, "%s%d", prefix, i);
        tt_vocab_add(v, word, strlen(word));
    }
}

/* V words ([PAD], [UNK], [MASK], then w3 ..), V labels for tag and classify, and
 * NAMED_BATCHES * B training examples of random words (never a special) and labels, each as
 * long as a batch row takes whole; no validation split (the bench never evaluates). */
static void random_corpus(tt_corpus *c, const tt_config *cfg, int V)
{
    const int T = cfg->data.seq_len, n = NAMED_BATCHES * cfg->train.batch_size;
    const tt_task task = cfg->data.task;
    const bool labels = task == TT_TASK_TAG || task == TT_TASK_CLASSIFY;
    *c = (tt_corpus){.task = task, .seq_len = T};
    tt_vocab_init(&c->words);
    tt_vocab_init(&c->labels);
    add_names(&c->words, "w", V);
    if (labels) add_names(&c->labels, "t", V);
    const int words = task == TT_TASK_LM ? T + 1 : T;
    const int tags = task == TT_TASK_TAG ? T : task == TT_TASK_CLASSIFY ? 1 : 0;
    tt_split *s = &c->train;
    snprintf(s->path, sizeof s->path, "(random tokens)");
    s->n = n;
    s->n_words = (int64_t)n * words;
    s->ex = tt_xcalloc((size_t)n, sizeof *s->ex);
    s->store = tt_xmalloc((size_t)n * (words + tags) * sizeof(int32_t));
    uint64_t seed = (uint64_t)cfg->seed * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < n; i++) {
        int32_t *w = s->store + (size_t)i * (words + tags);
        for (int t = 0; t < words; t++)
            w[t] = TT_TOK_SPECIALS + (int32_t)(next_word(&seed) % (uint32_t)(V - TT_TOK_SPECIALS));
        for (int t = 0; t < tags; t++) w[words + t] = (int32_t)(next_word(&seed) % (uint32_t)V);
        s->ex[i] = (tt_example){.words = w, .tags = labels ? w + words : NULL, .n = words,
                                .line = i + 1};
    }
    c->ambiguous = tt_xcalloc((size_t)V, sizeof(bool));
}

/* The share of padding among the input positions of one epoch's batches (tt_batch_fill's rule:
 * an lm example of n words gives n - 1 inputs; rows past the end are all padding). */
static double pad_share(const tt_corpus *d, int B, int T)
{
    const tt_split *s = &d->train;
    int64_t inputs = 0, batches = (s->n + B - 1) / B;
    for (int i = 0; i < s->n; i++) {
        int n = s->ex[i].n, len = d->task == TT_TASK_LM && n > 1 ? n - 1 : n;
        inputs += len < T ? len : T;
    }
    return batches ? 1.0 - (double)inputs / ((double)batches * B * T) : 0;
}

int bench_load(bench_run *b, const char *config, const char *const *sets, int n_sets,
               int threads, char *err, size_t errlen)
{
    *b = (bench_run){0};
    tt_run *r = &b->r;
    snprintf(b->name, sizeof b->name, "%s", config);
    const named *n = NULL;
    for (int i = 0; i < N_NAMED; i++)
        if (strcmp(config, NAMED[i].name) == 0) n = &NAMED[i];
    int rc;
    if (n) {
        char json[1024], origin[64];
        named_json(n, json, sizeof json);
        snprintf(origin, sizeof origin, "bench config %s", n->name);
        rc = tt_config_from_text(&r->cfg, json, origin, sets, n_sets, err, errlen);
        if (!rc) random_corpus(&r->data, &r->cfg, n->V);
        b->named = true;
    } else {
        rc = tt_config_load(&r->cfg, config, sets, n_sets, err, errlen);
        if (rc && access(config, F_OK) != 0) {
            size_t used = strlen(err);
            snprintf(err + used, errlen - used, "\nHINT: --config takes a config file or one "
                     "of the named configs: %s", BENCH_NAMES);
        }
        if (!rc) rc = tt_corpus_load(&r->data, &r->cfg, err, errlen);
    }
    if (!rc) {
        r->cfg.threads = threads;
        rc = tt_run_check_memory(&r->cfg, &r->data, err, errlen);
    }
    if (rc) {
        bench_free(b);
        return -1;
    }
    b->pad_share = pad_share(&r->data, r->cfg.train.batch_size, r->cfg.data.seq_len);
    return 0;
}

int bench_init(bench_run *b, char *err, size_t errlen) { return tt_run_init(&b->r, err, errlen); }

void bench_free(bench_run *b) { tt_run_free(&b->r); }

double bench_step_flops(const bench_run *b)
{
    const tt_config *c = &b->r.cfg;
    const double B = c->train.batch_size, T = c->data.seq_len, N = B * T, d = c->model.d_model;
    const double f = c->model.d_ff, H = c->model.n_heads, dk = d / H;
    const double n_out = tt_corpus_n_out(&b->r.data);
    const double P = c->model.causal ? T * (T + 1) / 2 : T * T; /* score entries computed */
    const double layer = 2 * N * 3 * d * d + 2 * N * d * d + 2 * 2 * N * f * d +
                         2 * 2 * B * H * P * dk;
    const bool classify = c->data.task == TT_TASK_CLASSIFY;
    const double head = 2 * (classify ? B : N) * n_out * d, pool = classify ? 2 * B * T * d : 0;
    return 3 * (c->model.n_layers * layer + head) + 2 * pool;
}

static void add_str(cJSON *o, const char *key, const char *v)
{
    cJSON_AddStringToObject(o, key, v);
}

static void add_num(cJSON *o, const char *key, double v) { cJSON_AddNumberToObject(o, key, v); }

char *bench_spec_json(const bench_run *b)
{
    const tt_config *c = &b->r.cfg;
    static const char *schedules[] = {"constant", "linear", "cosine"};
    cJSON *o = cJSON_CreateObject();
    add_str(o, "name", b->name);
    add_str(o, "task", tt_task_name(c->data.task));
    add_num(o, "V", b->r.data.words.n);
    add_num(o, "n_out", tt_corpus_n_out(&b->r.data));
    add_num(o, "T", c->data.seq_len);
    add_num(o, "B", c->train.batch_size);
    add_num(o, "d", c->model.d_model);
    add_num(o, "h", c->model.n_heads);
    add_num(o, "L", c->model.n_layers);
    add_num(o, "d_ff", c->model.d_ff);
    add_str(o, "norm", c->model.pre_norm ? "pre" : "post");
    add_str(o, "activation", c->model.gelu ? "gelu" : "relu");
    add_str(o, "positional", c->model.learned_pos ? "learned" : "sinusoidal");
    add_num(o, "max_len", c->model.max_len);
    cJSON_AddBoolToObject(o, "causal", c->model.causal);
    add_num(o, "dropout", c->model.dropout);
    add_num(o, "attn_dropout", c->model.attn_dropout);
    add_str(o, "attn_scale", c->model.attn_scale_none ? "none" : "sqrt_dk");
    add_num(o, "attn_temperature", c->model.attn_temperature);
    cJSON_AddBoolToObject(o, "embed_scale", c->model.embed_scale);
    if (c->data.task == TT_TASK_CLASSIFY)
        add_str(o, "pool", c->model.pool == TT_POOL_FIRST ? "first" : "mean");
    if (c->data.task == TT_TASK_MLM) add_num(o, "mask_prob", c->data.mask_prob);
    add_str(o, "optimizer", c->train.optimizer == TT_OPT_SGD ? "sgd" : "adamw");
    add_num(o, "lr", c->train.lr);
    add_num(o, "beta1", c->train.beta1);
    add_num(o, "beta2", c->train.beta2);
    add_num(o, "eps", c->train.eps);
    add_num(o, "weight_decay", c->train.weight_decay);
    add_num(o, "momentum", c->train.momentum);
    add_num(o, "grad_clip", c->train.grad_clip);
    add_str(o, "schedule", schedules[c->train.schedule]);
    add_num(o, "warmup_steps", c->train.warmup_steps);
    add_num(o, "seed", (double)c->seed);
    add_num(o, "threads", c->threads);
    add_str(o, "device", tt_device_name(c->device));
    add_num(o, "pad_share", b->pad_share);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}
