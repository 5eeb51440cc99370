/* data.c: loading the corpora (see data.h for the formats), batches and shuffling.
 * Loading is two passes over the training file (count words and tags, then encode with the
 * sorted vocabulary) and one over the validation file; each line is checked as it is read:
 * UTF-8, the TAB and the tag count for the task, the length against seq_len. With
 * data.valid_share there is no validation file: a first pass counts the training file's
 * examples to draw the split, and the validation part is encoded from the same file. */
#include "train/data/data.h"

#include "tensor/backend.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
    const char *p;
    size_t n;
} span;

/* The words and tags of one line, as spans into the file's buffer. */
typedef struct line {
    span *words, *tags;
    int n_words, n_tags, cap;
} line;

static int read_all(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) return tt_errorf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    int rc = tt_read_bounded(f, path, TT_DATA_MAX_BYTES, "a data file is UTF-8 text of at most "
                             "1 GiB", buf, len, err, errlen);
    fclose(f);
    return rc;
}

/* Splits s[0..n) at spaces into spans appended to words or tags. */
static int split(line *l, bool tags, const char *s, size_t n)
{
    int count = 0;
    const char *word;
    size_t len;
    for (const char *p = s; tt_next_word(&p, s + n, &word, &len);) {
        if (l->n_words + l->n_tags + 1 > l->cap) {
            l->cap = l->cap ? 2 * l->cap : 64;
            l->words = tt_xrealloc(l->words, (size_t)l->cap * sizeof(span));
            l->tags = tt_xrealloc(l->tags, (size_t)l->cap * sizeof(span));
        }
        span sp = {word, len};
        if (tags) l->tags[l->n_tags++] = sp;
        else l->words[l->n_words++] = sp;
        count++;
    }
    return count;
}

static const char *format_of(tt_task t)
{
    switch (t) {
    case TT_TASK_TAG: return "'words<TAB>tags' with one tag per word";
    case TT_TASK_CLASSIFY: return "'LABEL<TAB>words'";
    default: return "a sentence of words separated by spaces";
    }
}

/* Parses one line for the task. Returns 0, 1 for a blank line, -1 with a message. */
static int parse_line(line *l, tt_task task, const char *s, size_t n, const char *where,
                      char *err, size_t errlen)
{
    l->n_words = l->n_tags = 0;
    if (n && s[n - 1] == '\r') n--;
    size_t ok = tt_utf8_valid_prefix(s, n);
    if (ok < n)
        return tt_errorf(err, errlen, "%s: invalid UTF-8 at byte %zu of the line", where, ok + 1);
    size_t blank = 0;
    while (blank < n && (s[blank] == ' ' || s[blank] == '\t')) blank++;
    if (blank == n) return 1;
    const char *tab = memchr(s, '\t', n);
    bool labelled = task == TT_TASK_TAG || task == TT_TASK_CLASSIFY;
    if (labelled && !tab)
        return tt_errorf(err, errlen, "%s: no TAB; a %s line is %s", where, tt_task_name(task),
                         format_of(task));
    if (!labelled && tab)
        return tt_errorf(err, errlen, "%s: a TAB; a %s line is %s", where, tt_task_name(task),
                         format_of(task));
    if (labelled && memchr(tab + 1, '\t', n - (size_t)(tab + 1 - s)))
        return tt_errorf(err, errlen, "%s: more than one TAB; a %s line is %s", where,
                         tt_task_name(task), format_of(task));
    size_t left = tab ? (size_t)(tab - s) : n;
    if (task == TT_TASK_CLASSIFY) {
        if (split(l, true, s, left) != 1)
            return tt_errorf(err, errlen, "%s: %d labels before the TAB; a classify line is %s",
                             where, l->n_tags, format_of(task));
        split(l, false, tab + 1, n - left - 1);
    } else {
        split(l, false, s, left);
        if (task == TT_TASK_TAG) split(l, true, tab + 1, n - left - 1);
    }
    if (l->n_words == 0) return tt_errorf(err, errlen, "%s: no words; a %s line is %s", where,
                                          tt_task_name(task), format_of(task));
    if (task == TT_TASK_TAG && l->n_tags != l->n_words)
        return tt_errorf(err, errlen, "%s: %d words but %d tags; a tag line has one tag per word",
                         where, l->n_words, l->n_tags);
    return 0;
}

typedef struct count_entry {
    const char *word;
    int64_t count;
} count_entry;

static int by_count(const void *a, const void *b)
{
    const count_entry *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->word, y->word);
}

static int by_bytes(const void *a, const void *b)
{
    return strcmp(((const count_entry *)a)->word, ((const count_entry *)b)->word);
}

/* The final vocabulary from words seen in training: specials first (when asked), then by
 * count or in byte order. */
static void sorted_vocab(tt_vocab *out, const tt_vocab *seen, const int64_t *counts,
                         bool specials, bool by_frequency)
{
    count_entry *e = tt_xmalloc((size_t)(seen->n ? seen->n : 1) * sizeof *e);
    for (int i = 0; i < seen->n; i++) e[i] = (count_entry){seen->words[i], counts[i]};
    qsort(e, (size_t)seen->n, sizeof *e, by_frequency ? by_count : by_bytes);
    tt_vocab_init(out);
    if (specials) {
        static const char *names[TT_TOK_SPECIALS] = {"[PAD]", "[UNK]", "[MASK]"};
        for (int i = 0; i < TT_TOK_SPECIALS; i++) tt_vocab_add(out, names[i], strlen(names[i]));
    }
    for (int i = 0; i < seen->n; i++) tt_vocab_add(out, e[i].word, strlen(e[i].word));
    free(e);
}

/* counts[id] += 1 for the word, adding it to `seen` (and a zero count) when new */
static void count_word(tt_vocab *seen, int64_t **counts, span w)
{
    int before = seen->n;
    int id = tt_vocab_add(seen, w.p, w.n);
    if (id == before) {
        *counts = tt_xrealloc(*counts, (size_t)seen->n * sizeof(int64_t));
        (*counts)[id] = 0;
    }
    (*counts)[id] += 1;
}

/* The examples of a file that a pass takes: all (part NULL), or example i (blank lines do not
 * count) when part[i] == want. */
typedef struct subset {
    const uint8_t *part;
    uint8_t want;
} subset;
static const subset ALL = {NULL, 0};

/* Reads a split. Pass `count` (training, first passes): only counts, into s->n every example
 * of the file, into seen_w/cw the words of the subset's examples, into seen_t/ct the tags of
 * every example (either pair NULL: not counted). Otherwise encodes the subset's lines into s
 * with c's vocabularies. */
static int read_split(tt_corpus *c, const tt_config *cfg, tt_split *s, const char *path,
                      bool count, subset sub, tt_vocab *seen_w, int64_t **cw, tt_vocab *seen_t,
                      int64_t **ct, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    if (read_all(path, &buf, &len, err, errlen)) return -1;
    line l = {0};
    int rc = 0, lineno = 0, n_seen = 0;
    int64_t store_n = 0, store_cap = 0;
    int64_t *offsets = NULL; /* per example: words at store[off], tags after them */
    snprintf(s->path, sizeof s->path, "%s", path);
    char where[TT_CONFIG_PATH + 32];
    for (size_t at = 0; at < len && rc == 0; lineno++) {
        /* a line ends at LF, CRLF or a lone CR */
        size_t n = strcspn(buf + at, "\r\n");
        snprintf(where, sizeof where, "%s:%d", path, lineno + 1);
        int r = parse_line(&l, c->task, buf + at, n, where, err, errlen);
        at += n + 1 + (buf[at + n] == '\r' && buf[at + n + 1] == '\n');
        if (r < 0) rc = -1;
        if (r) continue;
        bool truncated = l.n_words > c->seq_len;
        if (truncated) {
            if (!cfg->data.truncate) {
                rc = tt_errorf(err, errlen, "%s: %d words, more than data.seq_len (%d); set "
                               "data.truncate true to cut such lines", where, l.n_words,
                               c->seq_len);
                break;
            }
            l.n_words = c->seq_len;
            if (c->task == TT_TASK_TAG) l.n_tags = c->seq_len;
        }
        bool in = !sub.part || sub.part[n_seen] == sub.want;
        n_seen++;
        if (count) {
            for (int i = 0; in && seen_w && i < l.n_words; i++) count_word(seen_w, cw, l.words[i]);
            for (int i = 0; seen_t && i < l.n_tags; i++) count_word(seen_t, ct, l.tags[i]);
            s->n++;
            continue;
        }
        if (!in) continue;
        s->n_truncated += truncated;
        int64_t need = l.n_words + l.n_tags;
        if (store_n + need > store_cap) {
            store_cap = 2 * (store_n + need) + 1024;
            s->store = tt_xrealloc(s->store, (size_t)store_cap * sizeof(int32_t));
        }
        for (int i = 0; i < l.n_words; i++) {
            int id = tt_vocab_find(&c->words, l.words[i].p, l.words[i].n);
            s->store[store_n + i] = id < 0 ? TT_TOK_UNK : id;
        }
        for (int i = 0; i < l.n_tags; i++) {
            int id = tt_vocab_find(&c->labels, l.tags[i].p, l.tags[i].n);
            if (id < 0) {
                rc = tt_errorf(err, errlen, "%s: %s '%.*s' does not occur in the training data "
                               "(%s has %d)", where, c->task == TT_TASK_TAG ? "tag" : "label",
                               (int)l.tags[i].n, l.tags[i].p, c->train.path, c->labels.n);
                break;
            }
            s->store[store_n + l.n_words + i] = id;
        }
        if (rc) break;
        s->ex = tt_xrealloc(s->ex, (size_t)(s->n + 1) * sizeof *s->ex);
        offsets = tt_xrealloc(offsets, (size_t)(s->n + 1) * sizeof *offsets);
        s->ex[s->n] = (tt_example){.n = l.n_words, .line = lineno + 1};
        offsets[s->n++] = store_n;
        s->n_words += l.n_words;
        store_n += need;
    }
    if (rc == 0 && !count && s->n == 0)
        rc = tt_errorf(err, errlen, "%s: no examples (the file is empty or blank)", path);
    for (int i = 0; rc == 0 && !count && i < s->n; i++) {
        s->ex[i].words = s->store + offsets[i];
        s->ex[i].tags = c->task == TT_TASK_TAG || c->task == TT_TASK_CLASSIFY
                            ? s->store + offsets[i] + s->ex[i].n
                            : NULL;
    }
    free(offsets);
    free(l.words);
    free(l.tags);
    free(buf);
    return rc;
}

/* order[0..n) = a permutation drawn from (seed, stream, round): Fisher-Yates, where
 * (w * (i+1)) >> 32 is uniform in [0, i]. */
static void permute(int *order, int n, uint64_t seed, uint64_t stream, int round)
{
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        uint32_t w = tt_rng_word(seed, stream, ((uint64_t)round << 32) + (uint64_t)i);
        int j = (int)(((uint64_t)w * (uint64_t)(i + 1)) >> 32);
        int tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
}

/* data.valid_share: part[i] = 1 for the n examples' validation part, round(share * n) of
 * them (at least 1, and at least 1 left to train on): the first of a permutation drawn from
 * (seed, TT_STREAM_SPLIT). Malloc'ed into *part; 0, or -1 with err. */
static int share_parts(uint8_t **part, int n, const tt_config *cfg, char *err, size_t errlen)
{
    if (n < 2)
        return tt_errorf(err, errlen, "%s: %d example; data.valid_share needs at least 2 (one "
                         "to train on, one to validate)\nHINT: give a data.valid file instead",
                         cfg->data.train, n);
    long want = lround(cfg->data.valid_share * n);
    int n_valid = want < 1 ? 1 : want > n - 1 ? n - 1 : (int)want;
    int *order = tt_xmalloc((size_t)n * sizeof *order);
    permute(order, n, (uint64_t)cfg->seed, TT_STREAM_SPLIT, 0);
    *part = tt_xcalloc((size_t)n, 1);
    for (int k = 0; k < n_valid; k++) (*part)[order[k]] = 1;
    free(order);
    return 0;
}

/* The first passes over the training file: the words of the training examples and every tag
 * into the seen vocabularies. With data.valid_share the examples are counted first, to draw
 * the split (*part, malloc'ed); the labels come from the whole file, so that a seed never
 * draws a split whose validation part has a label training lacks. */
static int count_train(tt_corpus *c, const tt_config *cfg, uint8_t **part, tt_vocab *seen_w,
                       int64_t **cw, tt_vocab *seen_t, int64_t **ct, char *err, size_t errlen)
{
    const char *path = cfg->data.train;
    tt_split all = {0};
    int rc;
    if (cfg->data.valid_share > 0) {
        rc = read_split(c, cfg, &all, path, true, ALL, NULL, NULL, seen_t, ct, err, errlen);
        if (rc == 0 && all.n) rc = share_parts(part, all.n, cfg, err, errlen);
        if (rc == 0 && all.n)
            rc = read_split(c, cfg, &all, path, true, (subset){*part, 0}, seen_w, cw, NULL, NULL,
                            err, errlen);
    } else {
        rc = read_split(c, cfg, &all, path, true, ALL, seen_w, cw, seen_t, ct, err, errlen);
    }
    if (rc == 0 && seen_w->n == 0)
        rc = tt_errorf(err, errlen, "%s: no examples (the file is empty or blank)", path);
    return rc;
}

int tt_corpus_load(tt_corpus *c, const tt_config *cfg, char *err, size_t errlen)
{
    *c = (tt_corpus){.task = cfg->data.task, .seq_len = cfg->data.seq_len};
    tt_vocab seen_w, seen_t;
    tt_vocab_init(&seen_w);
    tt_vocab_init(&seen_t);
    int64_t *cw = NULL, *ct = NULL;
    uint8_t *part = NULL; /* data.valid_share: 1 for the validation examples of data.train */
    int rc = count_train(c, cfg, &part, &seen_w, &cw, &seen_t, &ct, err, errlen);
    if (rc == 0) {
        sorted_vocab(&c->words, &seen_w, cw, true, true);
        sorted_vocab(&c->labels, &seen_t, ct, false, false);
        rc = read_split(c, cfg, &c->train, cfg->data.train, false, (subset){part, 0}, NULL, NULL,
                        NULL, NULL, err, errlen);
    }
    if (rc == 0)
        rc = read_split(c, cfg, &c->valid, part ? cfg->data.train : cfg->data.valid, false,
                        part ? (subset){part, 1} : ALL, NULL, NULL, NULL, NULL, err, errlen);
    if (rc == 0) {
        c->ambiguous = tt_xcalloc((size_t)c->words.n, sizeof(bool));
        for (int i = 0; i < cfg->data.n_ambiguous && rc == 0; i++) {
            const char *w = cfg->data.ambiguous[i];
            int id = tt_vocab_find(&c->words, w, strlen(w));
            if (id < TT_TOK_SPECIALS)
                rc = tt_errorf(err, errlen, "%s: data.ambiguous[%d]: \"%s\" does not occur in "
                               "the training data %s", cfg->path, i, w, cfg->data.train);
            else if (!c->ambiguous[id])
                c->ambiguous[id] = true, c->n_ambiguous++;
        }
    }
    tt_vocab_free(&seen_w);
    tt_vocab_free(&seen_t);
    free(cw);
    free(ct);
    free(part);
    if (rc) tt_corpus_free(c);
    return rc;
}

int tt_split_load(tt_corpus *c, const tt_config *cfg, tt_split *s, const char *path, char *err,
                  size_t errlen)
{
    *s = (tt_split){0};
    int rc = read_split(c, cfg, s, path, false, ALL, NULL, NULL, NULL, NULL, err, errlen);
    if (rc) {
        free(s->ex);
        free(s->store);
        *s = (tt_split){0};
    }
    return rc;
}

static void split_free(tt_split *s)
{
    free(s->ex);
    free(s->store);
}

void tt_corpus_free(tt_corpus *c)
{
    tt_vocab_free(&c->words);
    tt_vocab_free(&c->labels);
    split_free(&c->train);
    split_free(&c->valid);
    free(c->ambiguous);
    *c = (tt_corpus){0};
}

int tt_corpus_n_out(const tt_corpus *c)
{
    return c->task == TT_TASK_TAG || c->task == TT_TASK_CLASSIFY ? c->labels.n : c->words.n;
}

void tt_batch_alloc(tt_batch *b, int B, int T)
{
    size_t n = (size_t)B * T;
    *b = (tt_batch){.B = B, .T = T, .parts = 1};
    b->tokens = tt_xmalloc(n * sizeof(int32_t));
    b->targets = tt_xmalloc(n * sizeof(int32_t));
    b->pad = tt_xmalloc(n * sizeof(int32_t));
    b->ambiguous = tt_xmalloc(n);
}

void tt_batch_free(tt_batch *b)
{
    free(b->tokens);
    free(b->targets);
    free(b->pad);
    free(b->ambiguous);
    *b = (tt_batch){0};
}

void tt_batch_fill(tt_batch *b, const tt_corpus *c, const tt_split *s, const int *order,
                   int first, tt_rng *mask, double mask_prob)
{
    const int B = b->B, T = b->T;
    const bool classify = c->task == TT_TASK_CLASSIFY;
    tt_rng at = {0};
    /* the whole batch's draw; this share's rows of it */
    if (c->task == TT_TASK_MLM) at = tt_rng_take_share(mask, (int64_t)B * T, b->part, b->parts);
    first += b->part * B;
    b->n_tokens = 0;
    for (int r = 0; r < B; r++) {
        int32_t *tok = b->tokens + r * T, *tgt = classify ? b->targets + r : b->targets + r * T;
        int32_t *pad = b->pad + r * T;
        uint8_t *amb = b->ambiguous + r * T;
        for (int t = 0; t < T; t++) tok[t] = TT_TOK_PAD, pad[t] = 1, amb[t] = 0;
        for (int t = 0; t < (classify ? 1 : T); t++) tgt[t] = TT_IGNORE_INDEX;
        int idx = first + r;
        if (idx >= s->n) continue; /* past the end: a row of padding */
        const tt_example *e = &s->ex[order ? order[idx] : idx];
        /* lm: the input is every word but the last, the target the next word */
        int len = c->task == TT_TASK_LM && e->n > 1 ? e->n - 1 : e->n;
        for (int t = 0; t < len; t++) tok[t] = e->words[t], pad[t] = 0;
        b->n_tokens += len;
        switch (c->task) {
        case TT_TASK_TAG:
            for (int t = 0; t < len; t++) tgt[t] = e->tags[t], amb[t] = c->ambiguous[tok[t]];
            break;
        case TT_TASK_CLASSIFY: tgt[0] = e->tags[0]; break;
        case TT_TASK_LM:
            for (int t = 0; t + 1 < e->n; t++) tgt[t] = e->words[t + 1];
            break;
        case TT_TASK_MLM:
            for (int t = 0; t < len; t++)
                if ((double)tt_rng_uniform_at(&at, (int64_t)r * T + t) < mask_prob)
                    tgt[t] = tok[t], tok[t] = TT_TOK_MASK;
            break;
        }
    }
}

void tt_shuffle(int *order, int n, uint64_t seed, int epoch)
{
    permute(order, n, seed, TT_STREAM_SHUFFLE, epoch);
}
