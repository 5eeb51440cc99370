/* tokenizer.h: the word-level tokenizer (tokenizer.c): the special ids, a vocabulary, the one
 * word splitter, text to ids and back. Apart from data.h so that the config's checks can split
 * a probe into words without the corpora (config.c would otherwise include data.h, which
 * includes config.h). */
#ifndef TT_TOKENIZER_H
#define TT_TOKENIZER_H

#include "tensor/common.h"

enum { TT_TOK_PAD = 0, TT_TOK_UNK = 1, TT_TOK_MASK = 2, TT_TOK_SPECIALS = 3 };

/* Strings to ids with a hash table; ids index `words`. */
typedef struct tt_vocab {
    char **words;
    int n, cap;
    int *slots; /* open addressing, -1 empty; n_slots a power of two */
    int n_slots;
} tt_vocab;

void tt_vocab_init(tt_vocab *v);
/* The id of word (len bytes), or -1. */
int tt_vocab_find(const tt_vocab *v, const char *word, size_t len);
/* Adds the word if absent; returns its id. */
int tt_vocab_add(tt_vocab *v, const char *word, size_t len);
void tt_vocab_free(tt_vocab *v);

/* The next word of [*p, end) (words are separated by spaces and tabs): true with *word and
 * *len set and *p moved past it, false at the end. The one word splitter of the project. */
bool tt_next_word(const char **p, const char *end, const char **word, size_t *len);
/* Splits text into word ids (unknown words give [UNK]); returns the number of words, writing at
 * most max ids. */
int tt_tokenize(const tt_vocab *v, const char *text, int32_t *ids, int max);
/* Words joined by single spaces into out (at most len bytes with the NUL); returns the length
 * the full text needs. */
size_t tt_detokenize(const tt_vocab *v, const int32_t *ids, int n, char *out, size_t len);

#endif
