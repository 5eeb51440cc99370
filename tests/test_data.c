/* test_data.c: the tokenizer (vocabulary, UTF-8 validation, text escaped for a terminal, round
 * trips of Korean and English text), corpus loading (vocabulary order, tags, truncation, a byte
 * order mark) and every data error with its file and line, batches for each task, and the
 * shuffle. */
#include "testutil.h"

#include "train/data/data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes name in the test's folder with the given bytes; returns the path (tt_test_path's). */
static const char *put(const char *name, const char *bytes, size_t n)
{
    const char *p = tt_test_path(name);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
    return p;
}

static tt_config config(tt_task task, const char *train, const char *valid, int seq_len)
{
    tt_config c = {0};
    c.data.task = task;
    c.data.seq_len = seq_len;
    c.data.mask_prob = 0.15;
    snprintf(c.path, sizeof c.path, "%s", tt_test_path("config.json"));
    snprintf(c.data.train, sizeof c.data.train, "%s", put("train.txt", train, strlen(train)));
    snprintf(c.data.valid, sizeof c.data.valid, "%s", put("valid.txt", valid, strlen(valid)));
    return c;
}

START_TEST(test_utf8_validation)
{
    static const struct {
        const char *s;
        size_t n, valid;
    } cases[] = {
        {"plain ascii", 11, 11},
        {"\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4", 9, 9}, /* 한국어 */
        {"\xf0\x9f\x98\x80", 4, 4},                      /* U+1F600 */
        {"ab\xc0\x80", 4, 2},                            /* overlong NUL */
        {"a\xed\xa0\x80", 4, 1},                         /* UTF-16 surrogate */
        {"\xf4\x90\x80\x80", 4, 0},                      /* past U+10FFFF */
        {"ok\xe2\x82", 4, 2},                            /* cut short */
        {"x\x80y", 3, 1},                                /* stray continuation byte */
        {"\xff", 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(tt_utf8_valid_prefix(cases[i].s, cases[i].n) == cases[i].valid,
                      "case %zu: valid prefix %zu, want %zu", i,
                      tt_utf8_valid_prefix(cases[i].s, cases[i].n), cases[i].valid);
}
END_TEST

/* Text on its way to a terminal (tt_term_puts): printable UTF-8 as it is; C0 controls, DEL, the
 * C1 controls, bidirectional overrides and bytes that are not UTF-8 as \xHH, every byte of the
 * character; the bytes in keep as they are. */
START_TEST(test_term_escape)
{
    static const struct {
        const char *s, *keep, *want;
    } cases[] = {
        {"plain ascii ~", "", "plain ascii ~"},
        {"a\x1b[2Jb", "", "a\\x1b[2Jb"},
        {"\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xf0\x9f\x98\x80", "",
         "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xf0\x9f\x98\x80"},
        {"x\xc2\x9by\xc2\xa0", "", "x\\xc2\\x9by\xc2\xa0"}, /* CSI as C1; a no-break space */
        {"\xe2\x80\xae" "evil", "", "\\xe2\\x80\\xae" "evil"}, /* right-to-left override */
        {"bad\xff\xe2\x82", "", "bad\\xff\\xe2\\x82"},        /* not UTF-8, cut short */
        {"\x7f\x01", "", "\\x7f\\x01"},
        {"l1\nl2\t", "\n", "l1\nl2\\x09"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = tmpfile();
        ck_assert_ptr_nonnull(f);
        tt_term_puts(f, cases[i].s, cases[i].keep);
        char got[128] = "";
        rewind(f);
        size_t n = fread(got, 1, sizeof got - 1, f);
        got[n] = '\0';
        fclose(f);
        ck_assert_msg(strcmp(got, cases[i].want) == 0, "case %zu: \"%s\", want \"%s\"", i, got,
                      cases[i].want);
        const size_t len = strlen(cases[i].s);
        ck_assert_msg((tt_term_printable_prefix(cases[i].s, len) == len) ==
                          (strcmp(cases[i].s, cases[i].want) == 0),
                      "case %zu: printable prefix %zu of %zu", i,
                      tt_term_printable_prefix(cases[i].s, len), len);
    }
}
END_TEST

START_TEST(test_vocab_grows)
{
    tt_vocab v;
    tt_vocab_init(&v);
    char w[16];
    for (int i = 0; i < 5000; i++) {
        int len = snprintf(w, sizeof w, "w%d", i);
        ck_assert_int_eq(tt_vocab_add(&v, w, (size_t)len), i);
    }
    for (int i = 4999; i >= 0; i -= 7) {
        int len = snprintf(w, sizeof w, "w%d", i);
        ck_assert_int_eq(tt_vocab_find(&v, w, (size_t)len), i);
        ck_assert_int_eq(tt_vocab_add(&v, w, (size_t)len), i); /* no duplicate */
    }
    ck_assert_int_eq(v.n, 5000);
    ck_assert_int_eq(tt_vocab_find(&v, "w1", 1), -1); /* "w", a prefix */
    ck_assert_int_eq(tt_vocab_find(&v, "w50000", 6), -1);
    tt_vocab_free(&v);
}
END_TEST

/* Text -> ids -> text gives the text back (single-spaced), Korean included; unknown words come
 * back as [UNK]. */
START_TEST(test_tokenizer_round_trip)
{
    tt_config c = config(TT_TASK_LM,
                         "나는 학교에 간다\nthe cat eats the fish\n고양이가 생선을 먹는다\n",
                         "the cat eats\n", 8);
    tt_corpus d;
    char err[512];
    ck_assert_msg(tt_corpus_load(&d, &c, err, sizeof err) == 0, "%s", err);
    const char *texts[] = {"고양이가 생선을 먹는다", "the fish eats the cat", "나는 간다"};
    int32_t ids[16];
    char back[256];
    for (int i = 0; i < 3; i++) {
        int n = tt_tokenize(&d.words, texts[i], ids, 16);
        for (int k = 0; k < n; k++) ck_assert_int_ge(ids[k], TT_TOK_SPECIALS);
        size_t len = tt_detokenize(&d.words, ids, n, back, sizeof back);
        ck_assert_uint_eq(len, strlen(texts[i]));
        ck_assert_str_eq(back, texts[i]);
    }
    int n = tt_tokenize(&d.words, "  the   dog\teats ", ids, 16);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(ids[1], TT_TOK_UNK);
    tt_detokenize(&d.words, ids, n, back, sizeof back);
    ck_assert_str_eq(back, "the [UNK] eats");
    /* a short buffer is cut but stays terminated, and the needed length is returned */
    ck_assert_uint_eq(tt_detokenize(&d.words, ids, n, back, 5), strlen("the [UNK] eats"));
    ck_assert_str_eq(back, "the ");
    tt_corpus_free(&d);
}
END_TEST

/* Specials first, then by count (ties in byte order); tags in byte order; examples encoded. */
START_TEST(test_corpus_tag)
{
    tt_config c = config(TT_TASK_TAG,
                         "b a a\tX Y Y\n\nc a\tZ Y\r\n", "a b zz\tY X Z\n", 4);
    static char *amb[] = {"a"};
    c.data.ambiguous = amb;
    c.data.n_ambiguous = 1;
    tt_corpus d;
    char err[512];
    ck_assert_msg(tt_corpus_load(&d, &c, err, sizeof err) == 0, "%s", err);
    const char *words[] = {"[PAD]", "[UNK]", "[MASK]", "a", "b", "c"};
    ck_assert_int_eq(d.words.n, 6);
    for (int i = 0; i < 6; i++) ck_assert_str_eq(d.words.words[i], words[i]);
    ck_assert_int_eq(d.labels.n, 3);
    ck_assert_str_eq(d.labels.words[0], "X");
    ck_assert_str_eq(d.labels.words[2], "Z");
    ck_assert_int_eq(tt_corpus_n_out(&d), 3);
    ck_assert_int_eq(d.train.n, 2); /* the blank line is skipped */
    ck_assert_int_eq(d.train.ex[1].line, 3);
    ck_assert_int_eq(d.train.ex[1].n, 2);
    ck_assert_int_eq(d.train.ex[1].words[0], 5); /* c */
    ck_assert_int_eq(d.train.ex[1].tags[1], 1);  /* Y */
    ck_assert_int_eq(d.valid.ex[0].words[2], TT_TOK_UNK);
    ck_assert(d.ambiguous[3] && !d.ambiguous[4]);
    ck_assert_int_eq(d.n_ambiguous, 1);
    tt_corpus_free(&d);
}
END_TEST

/* A UTF-8 byte order mark at the start of a data file is no part of the first word (it made
 * "\uFEFFb" a word of its own, and the validation file's first word unknown), nor of a
 * classify file's first label. */
START_TEST(test_bom_dropped)
{
    tt_config c = config(TT_TASK_TAG, "\xEF\xBB\xBF" "b a\tX Y\n", "\xEF\xBB\xBF" "a b\tY X\n", 4);
    tt_corpus d;
    char err[512];
    ck_assert_msg(tt_corpus_load(&d, &c, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(d.words.n, 5);
    ck_assert_int_eq(tt_vocab_find(&d.words, "b", 1), 4);
    ck_assert_int_eq(d.train.ex[0].words[0], 4);
    ck_assert_int_eq(d.valid.ex[0].words[0], 3); /* a, not [UNK] */
    tt_corpus_free(&d);
    c = config(TT_TASK_CLASSIFY, "\xEF\xBB\xBF" "POS\ta b\nNEG\tb\n", "POS\ta\n", 4);
    ck_assert_msg(tt_corpus_load(&d, &c, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(d.labels.n, 2);
    ck_assert_int_eq(tt_vocab_find(&d.labels, "POS", 3), d.train.ex[0].tags[0]);
    tt_corpus_free(&d);
}
END_TEST

typedef struct bad_case {
    tt_task task;
    const char *train, *valid;
    bool truncate;
    const char *want[3]; /* substrings of the message */
} bad_case;

START_TEST(test_corpus_errors)
{
    static const bad_case cases[] = {
        {TT_TASK_TAG, "a b\tX Y\na \xff\tX Y\n", "a\tX\n", false, {"train.txt:2", "UTF-8"}},
        {TT_TASK_TAG, "a b\tX Y\n", "a b X Y\n", false, {"valid.txt:1", "no TAB", "tag"}},
        {TT_TASK_TAG, "a b\tX Y\nb a\tX\n", "a\tX\n", false, {"train.txt:2", "2 words but 1 tags"}},
        {TT_TASK_TAG, "a b\tX Y\n", "a b\tX W\n", false, {"valid.txt:1", "'W'", "training"}},
        {TT_TASK_TAG, "a b c d e\tX X X X X\n", "a\tX\n", false,
         {"train.txt:1", "5 words", "data.truncate"}},
        {TT_TASK_TAG, "", "a\tX\n", false, {"train.txt", "no examples"}},
        {TT_TASK_TAG, "a\tX\n", "\n  \n", false, {"valid.txt", "no examples"}},
        {TT_TASK_TAG, "a\tX\tY\n", "a\tX\n", false, {"train.txt:1", "more than one TAB"}},
        {TT_TASK_TAG, "a b\t\n", "a\tX\n", false, {"train.txt:1", "2 words but 0 tags"}},
        {TT_TASK_LM, "a b c\n", "a\tb\n", false, {"valid.txt:1", "a TAB", "lm"}},
        {TT_TASK_CLASSIFY, "P a b\n", "P\ta\n", false, {"train.txt:1", "no TAB", "LABEL"}},
        {TT_TASK_CLASSIFY, "P Q\ta b\n", "P\ta\n", false, {"train.txt:1", "2 labels"}},
        {TT_TASK_CLASSIFY, "P\t\n", "P\ta\n", false, {"train.txt:1", "no words"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_case *b = &cases[i];
        tt_config c = config(b->task, b->train, b->valid, 4);
        c.data.truncate = b->truncate;
        tt_corpus d;
        char err[512] = "";
        ck_assert_msg(tt_corpus_load(&d, &c, err, sizeof err) == -1, "case %zu loaded", i);
        for (int k = 0; k < 3 && b->want[k]; k++)
            ck_assert_msg(strstr(err, b->want[k]), "case %zu: '%s' not in: %s", i, b->want[k],
                          err);
        ck_assert_ptr_null(d.train.ex); /* freed */
    }
    /* a NUL byte, which strlen-based writing cannot put in a file */
    tt_config c = config(TT_TASK_LM, "a b\n", "a b\n", 4);
    put("train.txt", "a b\nc\0d\n", 8);
    tt_corpus d;
    char err[512];
    ck_assert_int_eq(tt_corpus_load(&d, &c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "train.txt:2") && strstr(err, "NUL"), "%s", err);
    /* a missing file */
    c = config(TT_TASK_LM, "a b\n", "a b\n", 4);
    unlink(c.data.valid);
    ck_assert_int_eq(tt_corpus_load(&d, &c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "valid.txt") && strstr(err, "cannot open"), "%s", err);
    /* an ambiguous word that is not in the data */
    c = config(TT_TASK_TAG, "a\tX\n", "a\tX\n", 4);
    static char *amb[] = {"a", "flys"};
    c.data.ambiguous = amb;
    c.data.n_ambiguous = 2;
    ck_assert_int_eq(tt_corpus_load(&d, &c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "data.ambiguous[1]") && strstr(err, "flys"), "%s", err);
}
END_TEST

START_TEST(test_truncate_counts)
{
    tt_config c = config(TT_TASK_TAG, "a b c d e f\tX X X X X Y\na\tX\n", "a b c d e\tX X X X X\n",
                         4);
    c.data.truncate = true;
    tt_corpus d;
    char err[512];
    ck_assert_msg(tt_corpus_load(&d, &c, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(d.train.n_truncated, 1);
    ck_assert_int_eq(d.valid.n_truncated, 1);
    ck_assert_int_eq(d.train.ex[0].n, 4);
    tt_corpus_free(&d);
}
END_TEST

START_TEST(test_batches)
{
    char err[512];
    tt_corpus d;
    tt_batch b;
    /* tag: padding, ignored targets, ambiguous flags, a row past the end */
    tt_config c = config(TT_TASK_TAG, "a b c\tX Y X\nb\tY\n", "a\tX\n", 4);
    static char *amb[] = {"b"};
    c.data.ambiguous = amb, c.data.n_ambiguous = 1;
    ck_assert_msg(tt_corpus_load(&d, &c, err, sizeof err) == 0, "%s", err);
    tt_batch_alloc(&b, 3, 4);
    tt_batch_fill(&b, &d, &d.train, NULL, 0, NULL, 0);
    /* b occurs twice, so the vocabulary is [PAD] [UNK] [MASK] b a c */
    const int32_t want_pad[12] = {0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < 12; i++) ck_assert_int_eq(b.pad[i], want_pad[i]);
    ck_assert_int_eq(b.tokens[0], 4); /* a */
    ck_assert_int_eq(b.tokens[1], 3); /* b */
    ck_assert_int_eq(b.targets[3], TT_IGNORE_INDEX);
    ck_assert_int_eq(b.targets[8], TT_IGNORE_INDEX);
    ck_assert(b.ambiguous[1] && b.ambiguous[4] && !b.ambiguous[0]);
    ck_assert_int_eq(b.n_tokens, 4);
    tt_batch_free(&b);
    tt_corpus_free(&d);

    /* lm: the input drops the last word, the target is the next word */
    c = config(TT_TASK_LM, "x y z\n", "x y\n", 4);
    ck_assert_msg(tt_corpus_load(&d, &c, err, sizeof err) == 0, "%s", err);
    tt_batch_alloc(&b, 1, 4);
    tt_batch_fill(&b, &d, &d.train, NULL, 0, NULL, 0);
    ck_assert_int_eq(b.pad[1], 0);
    ck_assert_int_eq(b.pad[2], 1);
    ck_assert_int_eq(b.targets[0], b.tokens[1]);
    ck_assert_str_eq(d.words.words[b.targets[1]], "z");
    ck_assert_int_eq(b.targets[2], TT_IGNORE_INDEX);
    tt_batch_free(&b);
    tt_corpus_free(&d);

    /* classify: one target per row */
    c = config(TT_TASK_CLASSIFY, "P\ta b\nQ\tb\n", "Q\ta\n", 4);
    ck_assert_msg(tt_corpus_load(&d, &c, err, sizeof err) == 0, "%s", err);
    tt_batch_alloc(&b, 3, 4);
    tt_batch_fill(&b, &d, &d.train, NULL, 0, NULL, 0);
    ck_assert_int_eq(b.targets[0], 0);
    ck_assert_int_eq(b.targets[1], 1);
    ck_assert_int_eq(b.targets[2], TT_IGNORE_INDEX);
    tt_batch_free(&b);
    tt_corpus_free(&d);
}
END_TEST

/* mlm: about mask_prob of the tokens become [MASK], exactly those carry targets. */
START_TEST(test_mlm_masks)
{
    char line[64], *text = tt_xcalloc(1, 200 * 64);
    for (int i = 0; i < 200; i++) {
        snprintf(line, sizeof line, "w%d w%d w%d w%d w%d w%d w%d w%d\n", i % 7, i % 5, i % 3,
                 i % 11, i % 13, i % 2, i % 17, i % 19);
        strcat(text, line);
    }
    tt_config c = config(TT_TASK_MLM, text, "w1 w2\n", 8);
    free(text);
    tt_corpus d;
    char err[512];
    ck_assert_msg(tt_corpus_load(&d, &c, err, sizeof err) == 0, "%s", err);
    tt_batch b;
    tt_batch_alloc(&b, 200, 8);
    tt_rng r;
    tt_rng_init(&r, 5, 3);
    tt_batch_fill(&b, &d, &d.train, NULL, 0, &r, 0.15);
    int masked = 0;
    for (int i = 0; i < 1600; i++) {
        bool m = b.tokens[i] == TT_TOK_MASK;
        masked += m;
        ck_assert_msg(m == (b.targets[i] != TT_IGNORE_INDEX), "token %d", i);
        if (m) ck_assert_int_eq(b.targets[i], d.train.ex[i / 8].words[i % 8]);
    }
    ck_assert_msg(masked > 170 && masked < 310, "%d of 1600 masked at p 0.15", masked);
    tt_batch_free(&b);
    tt_corpus_free(&d);
}
END_TEST

/* Data parallel (dist.h): share `part` of `parts` of a batch is rows part*B .. of the whole
 * batch, [MASK]s and targets included (mlm draws the whole batch's masks), whatever the
 * number of shares; the rows past the split's end are padding in every share. */
START_TEST(test_batch_shares)
{
    char line[64], *text = tt_xcalloc(1, 50 * 64);
    for (int i = 0; i < 50; i++) {
        snprintf(line, sizeof line, "w%d w%d w%d w%d w%d\n", i % 7, i % 5, i % 3, i % 11, i % 13);
        strcat(text, line);
    }
    tt_config c = config(TT_TASK_MLM, text, "w1 w2\n", 5);
    free(text);
    tt_corpus d;
    char err[512];
    ck_assert_msg(tt_corpus_load(&d, &c, err, sizeof err) == 0, "%s", err);
    enum { B = 12, T = 5 };
    int order[50];
    for (int i = 0; i < 50; i++) order[i] = (i * 17) % 50;
    for (int first = 0; first < 50; first += B) { /* the last batch: 2 rows, 10 of padding */
        tt_batch whole, share;
        tt_rng r0, r1;
        tt_rng_init(&r0, 9, 3);
        tt_batch_alloc(&whole, B, T);
        tt_batch_fill(&whole, &d, &d.train, order, first, &r0, 0.3);
        for (int parts = 2; parts <= 4; parts++)
            for (int part = 0; part < parts; part++) {
                const int b = B / parts;
                tt_rng_init(&r1, 9, 3);
                tt_batch_alloc(&share, b, T);
                share.part = part, share.parts = parts;
                tt_batch_fill(&share, &d, &d.train, order, first, &r1, 0.3);
                ck_assert_msg(r1.counter == r0.counter, "share %d/%d: cursor %llu, whole %llu",
                              part, parts, (unsigned long long)r1.counter,
                              (unsigned long long)r0.counter);
                size_t off = (size_t)part * b * T, n = (size_t)b * T * sizeof(int32_t);
                ck_assert_msg(!memcmp(share.tokens, whole.tokens + off, n) &&
                                  !memcmp(share.targets, whole.targets + off, n) &&
                                  !memcmp(share.pad, whole.pad + off, n),
                              "batch at %d, share %d of %d differs from the whole batch's rows",
                              first, part, parts);
                tt_batch_free(&share);
            }
        tt_batch_free(&whole);
    }
    tt_corpus_free(&d);
}
END_TEST

START_TEST(test_shuffle)
{
    enum { N = 1000 };
    int a[N], b[N], seen[N] = {0};
    tt_shuffle(a, N, 7, 1);
    for (int i = 0; i < N; i++) seen[a[i]]++;
    for (int i = 0; i < N; i++) ck_assert_int_eq(seen[i], 1);
    tt_shuffle(b, N, 7, 1);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    tt_shuffle(b, N, 7, 2);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    tt_shuffle(b, N, 8, 1);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    int fixed = 0;
    for (int i = 0; i < N; i++) fixed += a[i] == i;
    ck_assert_int_lt(fixed, 10); /* a permutation that moves (almost) everything */
}
END_TEST

/* Bounded reads: /dev/zero and /dev/urandom as data end at once (today's loader reads them
 * until memory runs out); tt_read_bounded reads at most max + 1 bytes: a file of max bytes is
 * read, one of max + 1 refused; it drops a byte order mark at the start, only there. */
START_TEST(test_bounded_reads)
{
    const char *devices[] = {"/dev/zero", "/dev/urandom"};
    char err[512];
    for (int i = 0; i < 2; i++) {
        tt_config c = config(TT_TASK_LM, "a b\n", "a b\n", 4);
        snprintf(c.data.train, sizeof c.data.train, "%s", devices[i]);
        tt_corpus d;
        ck_assert_int_eq(tt_corpus_load(&d, &c, err, sizeof err), -1);
        ck_assert_msg(strstr(err, devices[i]) && strstr(err, "a data file is UTF-8 text"), "%s",
                      err);
    }
    ck_assert_msg(strstr(err, "a NUL byte at offset"), "%s", err);
    const char *path = put("ten.txt", "0123\n5678\n", 10);
    for (size_t max = 8; max <= 11; max++) {
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        char *buf = NULL;
        size_t len = 0;
        int rc = tt_read_bounded(f, path, max, "WHAT", &buf, &len, err, sizeof err);
        fclose(f);
        if (max < 10) {
            ck_assert_int_eq(rc, -1);
            ck_assert_msg(strstr(err, "ten.txt: more than") && strstr(err, "bytes; WHAT"), "%s",
                          err);
        } else {
            ck_assert_int_eq(rc, 0);
            ck_assert_uint_eq(len, 10);
            ck_assert_str_eq(buf, "0123\n5678\n");
        }
        free(buf);
    }
    /* a byte order mark is dropped at the start only; a NUL's offset counts the file's bytes */
    static const struct {
        const char *bytes, *text;
        size_t n;
    } bom[] = {{"\xEF\xBB\xBF" "ab", "ab", 5},
               {"\xEF\xBB\xBF", "", 3},
               {"a\xEF\xBB\xBF", "a\xEF\xBB\xBF", 4},
               {"\xEF\xBB" "ab", "\xEF\xBB" "ab", 4}};
    for (size_t i = 0; i < sizeof bom / sizeof bom[0]; i++) {
        path = put("bom.txt", bom[i].bytes, bom[i].n);
        FILE *f = fopen(path, "rb");
        char *buf = NULL;
        size_t len = 0;
        ck_assert_int_eq(tt_read_bounded(f, path, 16, "WHAT", &buf, &len, err, sizeof err), 0);
        fclose(f);
        ck_assert_uint_eq(len, strlen(bom[i].text));
        ck_assert_str_eq(buf, bom[i].text);
        free(buf);
    }
    path = put("bom.txt", "\xEF\xBB\xBF" "a\0", 5);
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(tt_read_bounded(f, path, 16, "WHAT", &buf, &len, err, sizeof err), -1);
    fclose(f);
    ck_assert_msg(strstr(err, "bom.txt:1: a NUL byte at offset 4; WHAT"), "%s", err);
}
END_TEST

Suite *data_suite(void)
{
    Suite *s = suite_create("data");
    TCase *tc = tcase_create("data");
    tcase_add_checked_fixture(tc, tt_tmp_setup, tt_tmp_teardown);
    tcase_add_test(tc, test_utf8_validation);
    tcase_add_test(tc, test_term_escape);
    tcase_add_test(tc, test_vocab_grows);
    tcase_add_test(tc, test_tokenizer_round_trip);
    tcase_add_test(tc, test_corpus_tag);
    tcase_add_test(tc, test_bom_dropped);
    tcase_add_test(tc, test_corpus_errors);
    tcase_add_test(tc, test_truncate_counts);
    tcase_add_test(tc, test_batches);
    tcase_add_test(tc, test_mlm_masks);
    tcase_add_test(tc, test_batch_shares);
    tcase_add_test(tc, test_shuffle);
    tcase_add_test(tc, test_bounded_reads);
    suite_add_tcase(s, tc);
    return s;
}
