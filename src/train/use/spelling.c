/* spelling.c: a sentence as a user types it, spelled as the corpus the model learned (use.h).
 * The rules come from the vocabulary itself, not from a fixed list: capitals (ASCII and the
 * Latin-1 letters, U+00C0 to U+00DE) are read as lower case when no vocabulary word has one (the
 * corpora of data/ are lower case), and an
 * ASCII punctuation character that no vocabulary word holds separates words and is dropped
 * (so "arrow." and "time,flies" read as "arrow" and "time flies"). A word the vocabulary has
 * as written (a special token such as [MASK] included) is kept as it is, and a special token
 * stays whole inside a word ("[MASK]." reads as "[MASK]"). Other bytes (non-ASCII letters,
 * Korean included) are kept; what the vocabulary lacks is then read as [UNK], and
 * tt_use_warn_unknown names it. */
#include "train/use/use.h"

#include <stdlib.h>
#include <string.h>

static bool is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* The lower-case letter of the capital at p (before end), written to low; its length in bytes,
 * 0 when p holds no capital. */
static size_t capital_at(const char *p, const char *end, char low[2])
{
    unsigned char c = (unsigned char)p[0], d = end - p > 1 ? (unsigned char)p[1] : 0;
    if (c >= 'A' && c <= 'Z') return low[0] = (char)(c - 'A' + 'a'), 1;
    if (c != 0xC3 || d < 0x80 || d > 0x9E || d == 0x97) return 0; /* U+00D7 is the sign x */
    low[0] = (char)c, low[1] = (char)(d + 0x20);
    return 2;
}

static bool is_punct(unsigned char c)
{
    return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
           (c >= '{' && c <= '~');
}

void tt_use_spelling_of(tt_use_spelling *s, const tt_vocab *v)
{
    *s = (tt_use_spelling){.lower = true};
    char low[2];
    for (int i = TT_TOK_SPECIALS; i < v->n; i++)
        for (const char *p = v->words[i], *end = p + strlen(p); p < end; p++) {
            if (capital_at(p, end, low)) s->lower = false;
            if (is_punct((unsigned char)*p)) s->keep[(unsigned char)*p] = true;
        }
}

/* The length of the special token of v that starts at p (before end), else 0. */
static size_t special_at(const tt_vocab *v, const char *p, const char *end)
{
    for (int i = 0; i < TT_TOK_SPECIALS && i < v->n; i++) {
        size_t n = strlen(v->words[i]);
        if ((size_t)(end - p) >= n && !memcmp(p, v->words[i], n)) return n;
    }
    return 0;
}

/* Appends word[0..n) to out (at *at), a space before it unless it is the first. */
static void put(char *out, size_t *at, const char *word, size_t n)
{
    if (!n) return;
    if (*at) out[(*at)++] = ' ';
    memcpy(out + *at, word, n);
    *at += n;
}

char *tt_use_spell(const tt_use_spelling *s, const tt_vocab *v, const char *text)
{
    size_t len = strlen(text), at = 0;
    char *out = tt_xmalloc(2 * len + 1), *piece = tt_xmalloc(len + 1); /* spaces may double it */
    const char *p = text, *end = text + len;
    while (p < end) {
        while (p < end && is_space((unsigned char)*p)) p++;
        const char *w = p;
        while (p < end && !is_space((unsigned char)*p)) p++;
        if (p == w) break;
        if (tt_vocab_find(v, w, (size_t)(p - w)) >= 0) {
            put(out, &at, w, (size_t)(p - w));
            continue;
        }
        size_t n = 0;
        for (const char *q = w; q < p;) {
            unsigned char c = (unsigned char)*q;
            size_t special = c == '[' ? special_at(v, q, p) : 0;
            if (special || (is_punct(c) && !s->keep[c])) {
                put(out, &at, piece, n), n = 0;
                put(out, &at, q, special);
                q += special ? special : 1;
                continue;
            }
            char low[2];
            size_t cap = s->lower ? capital_at(q, p, low) : 0;
            if (cap) memcpy(piece + n, low, cap), n += cap, q += cap;
            else piece[n++] = *q++;
        }
        put(out, &at, piece, n);
    }
    out[at] = '\0';
    free(piece);
    return out;
}

char *tt_use_escaped(const char *w, size_t n)
{
    char *out = tt_xmalloc(4 * n + 1), *o = out; /* at most 4 bytes for each byte of w */
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)w[i];
        size_t ch = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        bool valid = c < 0x80 || (i + ch <= n && tt_utf8_valid_prefix(w + i, ch) == ch);
        bool c1 = valid && ch == 2 && c == 0xC2 && (unsigned char)w[i + 1] < 0xA0;
        if (c == '"' || c == '\\') *o++ = '\\', *o++ = (char)c, i++;
        else if (c1) o += sprintf(o, "\\u%04x", (unsigned char)w[i + 1]), i += 2;
        else if (c < 0x20 || c == 0x7F || !valid) o += sprintf(o, "\\x%02x", c), i++;
        else memcpy(o, w + i, ch), o += ch, i += ch;
    }
    *o = '\0';
    return out;
}

int tt_use_warn_unknown(const tt_vocab *v, const char *text, const char *where, FILE *out)
{
    int n = 0;
    const char *word, *end = text + strlen(text);
    size_t len;
    for (const char *p = text; tt_next_word(&p, end, &word, &len);) {
        if (tt_vocab_find(v, word, len) >= 0) continue;
        char *shown = tt_use_escaped(word, len);
        if (n++) fprintf(out, ", \"%s\"", shown);
        else fprintf(out, "warning: %s: not in the model's vocabulary, read as [UNK]: \"%s\"",
                     where, shown);
        free(shown);
    }
    if (n) fputc('\n', out);
    return n;
}
