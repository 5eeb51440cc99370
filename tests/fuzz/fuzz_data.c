/* fuzz_data.c: libFuzzer harness for the data loader (src/train/data/data.c), every format in
 * one target: the first input byte picks the format and the path through the loader, so this
 * one harness covers "each data format" (four targets keep CI's time down):
 *   bits 0-1  the task: tag, classify, mlm, lm (each has its own line format)
 *   bit 2     data.valid_share instead of a validation file (its own split path)
 *   bit 3     data.truncate
 *   bit 4     also tt_split_load the validation text with the corpus's vocabularies (./infer's
 *             evaluation of a file)
 *   bits 5-7  the seed (the valid_share split and the shuffle depend on it)
 * The second byte: data.seq_len (1..32) and the share ((k + 1) / 16, up to 0.5). The rest is
 * "TRAIN\0VALID\0AMBIGUOUS WORDS". A corpus that loads is then put through batches (shuffled
 * training, validation with mlm masks) and every id checked against its vocabulary. */
#include "fuzz_util.h"

#include "tensor/backend.h"
#include "train/data/data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_data: %s:%d: %s\n", __FILE__, __LINE__, #cond);                  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Every batch of split s: tokens in the vocabulary, targets ignored or in the head's range. */
static void check_batches(const tt_corpus *c, const tt_split *s, uint64_t seed, bool shuffle)
{
    enum { B = 3 };
    const int T = c->seq_len, n_out = tt_corpus_n_out(c);
    int *order = shuffle ? malloc((size_t)(s->n ? s->n : 1) * sizeof *order) : NULL;
    if (order) tt_shuffle(order, s->n, seed, 1);
    tt_rng mask;
    tt_rng_init(&mask, seed, 3);
    tt_batch b;
    tt_batch_alloc(&b, B, T);
    const int n_tgt = c->task == TT_TASK_CLASSIFY ? B : B * T;
    for (int first = 0; first < s->n; first += B) {
        tt_batch_fill(&b, c, s, order, first, &mask, 0.3);
        for (int i = 0; i < B * T; i++) {
            CHECK(b.tokens[i] >= 0 && b.tokens[i] < c->words.n);
            CHECK(b.pad[i] == 0 || b.pad[i] == 1);
        }
        for (int i = 0; i < n_tgt; i++)
            CHECK(b.targets[i] == TT_IGNORE_INDEX || (b.targets[i] >= 0 && b.targets[i] < n_out));
    }
    tt_batch_free(&b);
    free(order);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    const uint8_t mode = data[0], shape = data[1];
    char *parts[3];
    int n = tt_fuzz_split(data + 2, size - 2, parts, 3);
    tt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.data.task = (tt_task)(mode & 3);
    cfg.seed = mode >> 5;
    cfg.data.seq_len = 1 + (shape & 31);
    cfg.data.truncate = mode & 8;
    if (mode & 4) cfg.data.valid_share = ((shape >> 5) + 1) / 16.0;
    snprintf(cfg.path, sizeof cfg.path, "%s", tt_fuzz_path("config.json"));
    snprintf(cfg.data.train, sizeof cfg.data.train, "%s",
             tt_fuzz_write("train.txt", parts[0], strlen(parts[0])));
    const char *valid = n > 1 ? parts[1] : "";
    snprintf(cfg.data.valid, sizeof cfg.data.valid, "%s",
             tt_fuzz_write("valid.txt", valid, strlen(valid)));
    /* data.ambiguous: the words of the third part */
    char *ambiguous[16];
    cfg.data.ambiguous = ambiguous;
    for (char *w = n > 2 ? strtok(parts[2], " ") : NULL; w && cfg.data.n_ambiguous < 16;
         w = strtok(NULL, " "))
        ambiguous[cfg.data.n_ambiguous++] = w;

    tt_corpus c;
    char err[512] = "";
    int rc = tt_corpus_load(&c, &cfg, err, sizeof err);
    tt_fuzz_note("tt_corpus_load", rc ? err : "");
    if (rc == 0) {
        /* >= and not >: a data word spelled [PAD], [UNK] or [MASK] is that special token
         * (./infer's mlm prompts rely on it), so a file of only those adds no word */
        CHECK(c.train.n > 0 && c.valid.n > 0 && c.words.n >= TT_TOK_SPECIALS);
        check_batches(&c, &c.train, (uint64_t)cfg.seed, true);
        check_batches(&c, &c.valid, (uint64_t)cfg.seed, false);
        if (mode & 16) {
            tt_split s;
            rc = tt_split_load(&c, &cfg, &s, cfg.data.valid, err, sizeof err);
            tt_fuzz_note("tt_split_load", rc ? err : "");
            if (rc == 0) {
                check_batches(&c, &s, (uint64_t)cfg.seed, false);
                free(s.ex);
                free(s.store);
            } else {
                CHECK(err[0] && s.n == 0 && !s.ex && !s.store);
            }
        }
        tt_corpus_free(&c);
    } else {
        CHECK(err[0]);
    }
    tt_fuzz_parts_free(parts, n);
    return 0;
}
