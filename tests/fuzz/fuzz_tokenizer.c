/* fuzz_tokenizer.c: libFuzzer harness for the word tokenizer (src/train/data/tokenizer.c) and
 * the UTF-8 check every text goes through (tt_utf8_valid_prefix). The input is
 * "WORDS\0TEXT": WORDS, one per line (any bytes but newline, as a checkpoint's vocabulary may
 * hold), go into a vocabulary; TEXT is tokenized and detokenized. Checked, besides the
 * sanitizers: every word added is found again under its id; tokenize counts the same words
 * whatever its max and writes ids in range; detokenize always reports the same length, and a
 * short buffer gets a NUL-terminated prefix of the full text; the UTF-8 check agrees with a
 * second, table-driven decoder (Unicode's Table 3-7, well-formed byte sequences). */
#include "fuzz_util.h"

#include "train/data/data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_tokenizer: %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The length of the well-formed prefix of s[0..n), from the table of well-formed sequences:
 * the lead byte fixes the length and the range of the second byte; later bytes are 80..BF. */
static size_t utf8_reference(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t len;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c <= 0x7F) len = 1;
        else if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c == 0xE0) len = 3, lo = 0xA0;
        else if (c >= 0xE1 && c <= 0xEC) len = 3;
        else if (c == 0xED) len = 3, hi = 0x9F;
        else if (c >= 0xEE && c <= 0xEF) len = 3;
        else if (c == 0xF0) len = 4, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3) len = 4;
        else if (c == 0xF4) len = 4, hi = 0x8F;
        else return i;
        if (i + len > n) return i;
        if (len > 1 && (s[i + 1] < lo || s[i + 1] > hi)) return i;
        for (size_t k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
        i += len;
    }
    return n;
}

static void check_detokenize(const tt_vocab *v, const int32_t *ids, int n)
{
    size_t need = tt_detokenize(v, ids, n, NULL, 0);
    char *full = malloc(need + 1);
    CHECK(tt_detokenize(v, ids, n, full, need + 1) == need && strlen(full) == need);
    for (size_t len = 1; len <= need && len < 40; len += 3) {
        char part[40];
        CHECK(tt_detokenize(v, ids, n, part, len) == need);
        CHECK(strlen(part) == len - 1 && memcmp(part, full, len - 1) == 0);
    }
    free(full);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *parts[2];
    int n = tt_fuzz_split(data, size, parts, 2);
    const char *text = n > 1 ? parts[1] : parts[0];
    size_t text_len = strlen(text);
    CHECK(tt_utf8_valid_prefix(text, text_len) == utf8_reference((const uint8_t *)text,
                                                                  text_len));

    tt_vocab v;
    tt_vocab_init(&v);
    if (n > 1) {
        for (char *w = parts[0], *nl; *w; w = nl ? nl + 1 : w + strlen(w)) {
            nl = strchr(w, '\n');
            size_t len = nl ? (size_t)(nl - w) : strlen(w);
            int before = v.n, id = tt_vocab_add(&v, w, len);
            CHECK(id >= 0 && id <= before && v.n >= before);
            CHECK(tt_vocab_find(&v, w, len) == id && strlen(v.words[id]) == len &&
                  memcmp(v.words[id], w, len) == 0);
            if (!nl) break;
        }
        for (int id = 0; id < v.n; id++)
            CHECK(tt_vocab_find(&v, v.words[id], strlen(v.words[id])) == id);
    }

    int count = tt_tokenize(&v, text, NULL, 0);
    int32_t *ids = malloc((size_t)(count + 1) * sizeof *ids), few[3];
    CHECK(tt_tokenize(&v, text, ids, count) == count);
    CHECK(tt_tokenize(&v, text, few, 3) == count);
    for (int i = 0; i < count; i++) {
        CHECK(ids[i] >= 0 && (ids[i] == TT_TOK_UNK || ids[i] < v.n));
        if (i < 3) CHECK(few[i] == ids[i]);
    }
    check_detokenize(&v, ids, count);
    int32_t odd[4] = {-1, v.n, count ? ids[0] : 0, INT32_MAX}; /* ids a model never makes */
    check_detokenize(&v, odd, 4);
    free(ids);
    tt_vocab_free(&v);
    tt_fuzz_parts_free(parts, n);
    return 0;
}
