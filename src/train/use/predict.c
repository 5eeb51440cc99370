/* predict.c: what a trained model is asked (use.h): maps, predictions, generation, evaluation.
 * Each sentence is one row of a batch of the run's seq_len (B = 1), run in eval mode through
 * tt_run_forward, the forward of training (targets all ignored), and its logits copied to the
 * host; probabilities are the softmax of those logits, in double. */
#include "train/use/use.h"

#include "train/run/probes.h"

#include <stdio.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The words of text (at most max, pointers into text) and their ids; returns the word count
 * before the cut. */
static int words_of(const tt_vocab *v, const char *text, const char **w, size_t *len,
                    int32_t *ids, int max)
{
    int n = 0;
    const char *word, *end = text + strlen(text);
    size_t l;
    for (const char *p = text; tt_next_word(&p, end, &word, &l); n++)
        if (n < max) {
            int id = tt_vocab_find(v, word, l);
            w[n] = word, len[n] = l, ids[n] = id < 0 ? TT_TOK_UNK : id;
        }
    return n;
}

/* Notes go to stderr: stdout holds only the answers, one line per sentence. */
static void note_cut(const tt_run *r, int n)
{
    if (n > r->cfg.data.seq_len)
        fprintf(stderr, "note: %d words; the model reads the first %d (data.seq_len)\n", n,
                r->cfg.data.seq_len);
}

real *tt_use_logits(tt_run *r, const int32_t *ids, int n)
{
    TT_ASSERT_MSG(n >= 1 && n <= r->cfg.data.seq_len, "%d words for a row of %d", n,
                  r->cfg.data.seq_len);
    const int T = r->cfg.data.seq_len, V = tt_corpus_n_out(&r->data);
    tt_batch b;
    tt_batch_alloc(&b, 1, T);
    for (int t = 0; t < T; t++) {
        b.tokens[t] = t < n ? ids[t] : TT_TOK_PAD;
        b.pad[t] = t >= n;
        b.targets[t] = TT_IGNORE_INDEX;
    }
    b.n_tokens = n;
    bool was_training = r->g.training, was_no_grad = tt_graph_set_no_grad(&r->g, true);
    r->g.training = false;
    tt_var *logits;
    tt_run_forward(r, &b, &logits, NULL);
    real *host = tt_xmalloc(tt_tensor_bytes(&logits->val));
    TT_ASSERT(tt_shape_numel(logits->val.shape) ==
              (int64_t)(r->data.task == TT_TASK_CLASSIFY ? 1 : T) * V);
    r->g.be->to_host(host, logits->val.data, tt_tensor_bytes(&logits->val));
    r->g.training = was_training;
    tt_graph_set_no_grad(&r->g, was_no_grad);
    tt_batch_free(&b);
    return host;
}

/* p = softmax(x / tau) over n entries, in double; entries with skip[i] get 0. */
static void softmax(double *p, const real *x, int n, double tau, const bool *skip)
{
    double m = -INFINITY, s = 0;
    for (int i = 0; i < n; i++)
        if (!(skip && skip[i]) && (double)x[i] > m) m = (double)x[i];
    for (int i = 0; i < n; i++) s += p[i] = skip && skip[i] ? 0 : exp(((double)x[i] - m) / tau);
    for (int i = 0; i < n; i++) p[i] /= s;
}

/* The k most probable indices of p[0..n) into top (ties: the lower index first); returns k
 * clipped to n. */
static int top_of(const double *p, int n, int k, int *top)
{
    if (k > n) k = n;
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            bool taken = false;
            for (int q = 0; q < j && !taken; q++) taken = top[q] == i;
            if (!taken && (best < 0 || p[i] > p[best])) best = i;
        }
        top[j] = best;
    }
    return k;
}

/* A word as shown: as written when the vocabulary has it, else [UNK]. */
static void put_word(FILE *out, const char *w, size_t len, int32_t id)
{
    if (id == TT_TOK_UNK && !(len == 5 && !memcmp(w, "[UNK]", 5))) fputs("[UNK]", out);
    else fwrite(w, 1, len, out);
}

void tt_use_maps(tt_run *r, const char *const *texts, int n, tt_attn_epoch *e)
{
    tt_config *c = &r->cfg;
    for (int i = 0; i < c->data.n_probes; i++) free(c->data.probes[i]);
    free(c->data.probes);
    c->data.probes = tt_xcalloc((size_t)n + 1, sizeof(char *));
    c->data.n_probes = n;
    for (int i = 0; i < n; i++) {
        c->data.probes[i] = tt_xstrdup(texts[i]);
        note_cut(r, tt_tokenize(&r->data.words, texts[i], NULL, 0));
    }
    tt_probe_maps(r, e);
}

int tt_use_predict(tt_run *r, const char *text, int top_k, FILE *out, char *err, size_t errlen)
{
    const tt_corpus *d = &r->data;
    const int T = r->cfg.data.seq_len, V = tt_corpus_n_out(d);
    const char **w = tt_xmalloc((size_t)T * sizeof *w);
    size_t *len = tt_xmalloc((size_t)T * sizeof *len);
    int32_t *ids = tt_xmalloc((size_t)T * sizeof *ids);
    double *p = tt_xmalloc((size_t)V * sizeof *p);
    int *top = tt_xmalloc((size_t)V * sizeof *top);
    int n_all = words_of(&d->words, text, w, len, ids, T), n = n_all < T ? n_all : T, rc = 0;
    int masks = 0;
    for (int t = 0; t < n; t++) masks += ids[t] == TT_TOK_MASK;
    if (n == 0)
        rc = tt_errorf(err, errlen, "the sentence has no words");
    else if (d->task == TT_TASK_MLM && !masks)
        rc = tt_errorf(err, errlen, "\"%s\": no [MASK]; an mlm model fills masked words: write "
                       "[MASK] where a word is to be predicted", text);
    if (rc) goto out;
    note_cut(r, n_all);
    real *logits = tt_use_logits(r, ids, n);
    const tt_vocab *names = d->task == TT_TASK_TAG || d->task == TT_TASK_CLASSIFY ? &d->labels
                                                                                  : &d->words;
    bool *special = tt_xcalloc((size_t)V, sizeof(bool));
    if (names == &d->words) { /* the special tokens are never a target: never an answer */
        for (int i = 0; i < TT_TOK_SPECIALS; i++) special[i] = true;
        if (top_k > V - TT_TOK_SPECIALS) top_k = V - TT_TOK_SPECIALS;
    }
    switch (d->task) {
    case TT_TASK_TAG:
        for (int t = 0; t < n; t++) {
            softmax(p, logits + (size_t)t * V, V, 1, NULL);
            int k = top_of(p, V, top_k < 1 ? 1 : top_k, top);
            if (t && top_k <= 1) fputc(' ', out);
            put_word(out, w[t], len[t], ids[t]);
            if (top_k <= 1) {
                fprintf(out, "/%s", names->words[top[0]]);
                continue;
            }
            for (int j = 0; j < k; j++)
                fprintf(out, "%s%s %.4f", j ? ", " : "  ", names->words[top[j]], p[top[j]]);
            fputc('\n', out);
        }
        if (top_k <= 1) fputc('\n', out);
        break;
    case TT_TASK_CLASSIFY: {
        softmax(p, logits, V, 1, NULL);
        int k = top_of(p, V, top_k < 1 ? 1 : top_k, top);
        for (int j = 0; j < k; j++)
            fprintf(out, "%s%s %.4f", j ? ", " : "", names->words[top[j]], p[top[j]]);
        fputc('\n', out);
        break;
    }
    case TT_TASK_MLM:
    case TT_TASK_LM:
        for (int t = 0; t < n; t++) {
            bool mlm = d->task == TT_TASK_MLM;
            if (mlm ? ids[t] != TT_TOK_MASK : t != n - 1) continue;
            softmax(p, logits + (size_t)t * V, V, 1, special);
            int k = top_of(p, V, top_k < 1 ? 1 : top_k, top);
            if (mlm) fprintf(out, "[MASK] (word %d):", t + 1);
            else fprintf(out, "next word:");
            for (int j = 0; j < k; j++)
                fprintf(out, "%s %s %.4f", j ? "," : "", names->words[top[j]], p[top[j]]);
            fputc('\n', out);
        }
        break;
    }
    free(special);
    free(logits);
out:
    free(w);
    free(len);
    free(ids);
    free(p);
    free(top);
    return rc;
}

/* One draw, u in [0, 1), from p over its k most likely entries (k 0: all), never from the
 * special tokens (their p is 0; they are the last in top). */
static int draw(const double *p, int n, int k, double u, int *top)
{
    int most = n - TT_TOK_SPECIALS;
    int m = top_of(p, n, k > 0 && k < most ? k : most, top);
    double total = 0, acc = 0;
    for (int j = 0; j < m; j++) total += p[top[j]];
    for (int j = 0; j < m; j++)
        if ((acc += p[top[j]]) > u * total) return top[j];
    return top[m - 1];
}

int tt_use_generate(tt_run *r, const char *prompt, const tt_generate_opts *o, FILE *out,
                    int32_t *ids_out, char *err, size_t errlen)
{
    const tt_corpus *d = &r->data;
    if (d->task != TT_TASK_LM)
        return tt_errorf(err, errlen, "generation needs a language model (task lm); this "
                         "checkpoint's task is %s", tt_task_name(d->task));
    const int T = r->cfg.data.seq_len, V = d->words.n;
    int n_prompt = tt_tokenize(&d->words, prompt, NULL, 0);
    if (n_prompt == 0) return tt_errorf(err, errlen, "the prompt has no words");
    const int total = n_prompt + o->words;
    int32_t *ids = tt_xmalloc((size_t)total * sizeof *ids);
    const char **w = tt_xmalloc((size_t)n_prompt * sizeof *w);
    size_t *len = tt_xmalloc((size_t)n_prompt * sizeof *len);
    double *p = tt_xmalloc((size_t)V * sizeof *p);
    int *top = tt_xmalloc((size_t)V * sizeof *top);
    bool *special = tt_xcalloc((size_t)V, sizeof(bool));
    for (int i = 0; i < TT_TOK_SPECIALS; i++) special[i] = true;
    words_of(&d->words, prompt, w, len, ids, n_prompt);
    for (int i = 0; i < n_prompt; i++) put_word(out, w[i], len[i], ids[i]), fputc(' ', out);
    if (total > T + 1)
        fprintf(stderr, "note: the model reads at most %d words (data.seq_len): each word is "
                "drawn given the last %d\n", T, T);
    for (int n = n_prompt; n < total; n++) {
        int from = n > T ? n - T : 0; /* the context: the last T words */
        real *logits = tt_use_logits(r, ids + from, n - from);
        const real *row = logits + (size_t)(n - from - 1) * V;
        int next;
        if (o->temperature == 0) {
            softmax(p, row, V, 1, special);
            top_of(p, V, 1, top);
            next = top[0];
        } else {
            softmax(p, row, V, o->temperature, special);
            double u = (double)tt_rng_word_uniform(
                tt_rng_word(o->seed, TT_STREAM_GENERATE, (uint64_t)(n - n_prompt)));
            next = draw(p, V, o->top_k, u, top);
        }
        free(logits);
        ids[n] = next;
        fprintf(out, "%s%s", d->words.words[next], n + 1 < total ? " " : "\n");
        fflush(out); /* each word as it comes: a long text shows its progress */
    }
    if (ids_out) memcpy(ids_out, ids, (size_t)total * sizeof *ids);
    free(ids);
    free(w);
    free(len);
    free(p);
    free(top);
    free(special);
    return 0;
}

int tt_use_evaluate(tt_run *r, const char *path, tt_eval *e, char *err, size_t errlen)
{
    tt_split s;
    if (tt_split_load(&r->data, &r->cfg, &s, path, err, errlen)) return -1;
    free(r->data.valid.ex);
    free(r->data.valid.store);
    r->data.valid = s;
    *e = tt_run_evaluate(r);
    return 0;
}
