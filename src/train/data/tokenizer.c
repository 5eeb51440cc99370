/* tokenizer.c: the word-level tokenizer: a vocabulary with a hash table, UTF-8 validation, and
 * text to ids and back. Words are byte strings split at ASCII spaces and tabs, so any UTF-8
 * text (Korean included) is split only between characters, never inside one. */
#include "train/data/tokenizer.h"

#include <stdlib.h>
#include <string.h>

static uint32_t hash(const char *s, size_t n) /* FNV-1a */
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

void tt_vocab_init(tt_vocab *v) { *v = (tt_vocab){0}; }

static bool same(const char *word, const char *s, size_t n)
{
    return strncmp(word, s, n) == 0 && word[n] == '\0';
}

int tt_vocab_find(const tt_vocab *v, const char *word, size_t len)
{
    if (!v->n_slots) return -1;
    for (uint32_t i = hash(word, len) & (uint32_t)(v->n_slots - 1);;
         i = (i + 1) & (uint32_t)(v->n_slots - 1)) {
        int id = v->slots[i];
        if (id < 0) return -1;
        if (same(v->words[id], word, len)) return id;
    }
}

static void rehash(tt_vocab *v, int n_slots)
{
    free(v->slots);
    v->slots = tt_xmalloc((size_t)n_slots * sizeof(int));
    v->n_slots = n_slots;
    for (int i = 0; i < n_slots; i++) v->slots[i] = -1;
    for (int id = 0; id < v->n; id++) {
        uint32_t i = hash(v->words[id], strlen(v->words[id])) & (uint32_t)(n_slots - 1);
        while (v->slots[i] >= 0) i = (i + 1) & (uint32_t)(n_slots - 1);
        v->slots[i] = id;
    }
}

int tt_vocab_add(tt_vocab *v, const char *word, size_t len)
{
    int id = tt_vocab_find(v, word, len);
    if (id >= 0) return id;
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 64;
        v->words = tt_xrealloc(v->words, (size_t)v->cap * sizeof(char *));
    }
    char *w = tt_xmalloc(len + 1);
    memcpy(w, word, len);
    w[len] = '\0';
    v->words[v->n++] = w;
    if (2 * v->n > v->n_slots) rehash(v, v->n_slots ? 2 * v->n_slots : 128); /* load <= 1/2 */
    else {
        uint32_t i = hash(word, len) & (uint32_t)(v->n_slots - 1);
        while (v->slots[i] >= 0) i = (i + 1) & (uint32_t)(v->n_slots - 1);
        v->slots[i] = v->n - 1;
    }
    return v->n - 1;
}

void tt_vocab_free(tt_vocab *v)
{
    for (int i = 0; i < v->n; i++) free(v->words[i]);
    free(v->words);
    free(v->slots);
    *v = (tt_vocab){0};
}

static bool is_space(char c) { return c == ' ' || c == '\t'; }

bool tt_next_word(const char **p, const char *end, const char **word, size_t *len)
{
    const char *s = *p;
    while (s < end && is_space(*s)) s++;
    const char *w = s;
    while (s < end && !is_space(*s)) s++;
    *p = s;
    *word = w;
    *len = (size_t)(s - w);
    return s > w;
}

int tt_tokenize(const tt_vocab *v, const char *text, int32_t *ids, int max)
{
    int n = 0;
    const char *word, *end = text + strlen(text);
    size_t len;
    for (const char *p = text; tt_next_word(&p, end, &word, &len); n++) {
        int id = tt_vocab_find(v, word, len);
        if (n < max) ids[n] = id < 0 ? TT_TOK_UNK : id;
    }
    return n;
}

size_t tt_detokenize(const tt_vocab *v, const int32_t *ids, int n, char *out, size_t len)
{
    size_t need = 0;
    for (int i = 0; i < n; i++) {
        const char *w = ids[i] >= 0 && ids[i] < v->n ? v->words[ids[i]] : "[?]";
        size_t wl = strlen(w);
        if (i) {
            if (need + 1 < len) out[need] = ' ';
            need++;
        }
        for (size_t k = 0; k < wl; k++, need++)
            if (need + 1 < len) out[need] = w[k];
    }
    if (len) out[need < len ? need : len - 1] = '\0';
    return need;
}
