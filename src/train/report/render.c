/* render.c: the terminal view of a map, and the helpers the markup writers share (XML
 * escaping, the colour ramp). The maps themselves are maps.c's. */
#include "train/report/render.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ColorBrewer "Blues" (9 classes): sequential and close to perceptually even in lightness. */
const unsigned char tt_render_ramp[TT_RAMP_N][3] = {
    {247, 251, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
    {66, 146, 198},  {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};

void tt_render_color(double w, char hex[8])
{
    w = !(w > 0) ? 0 : w > 1 ? 1 : w; /* NaN to 0 */
    double x = w * (TT_RAMP_N - 1);
    int i = x >= TT_RAMP_N - 1 ? TT_RAMP_N - 2 : (int)x;
    double f = x - i;
    int c[3];
    for (int k = 0; k < 3; k++)
        c[k] = (int)lround(tt_render_ramp[i][k] +
                           (tt_render_ramp[i + 1][k] - tt_render_ramp[i][k]) * f);
    snprintf(hex, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
}

static void xml_run(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(c < 0x20 && c != '\t' && c != '\n' && c != '\r' ? '?' : c, f);
        }
    }
}

void tt_render_xml_puts(FILE *f, const char *s)
{
    tt_utf8_runs(f, s, xml_run);
}

double tt_render_text_px(const char *s, double font_px)
{
    double w = 0; /* in em: sans-serif ASCII averages about 0.55, Hangul and CJK 1.1 */
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        w += *p < 0x80 ? 0.55 : *p >= 0xE0 ? 1.1 : *p >= 0xC0 ? 0.64 : 0;
    return w * font_px;
}

/* ---- the terminal view ---- */

/* Display columns of a code point: 2 for Hangul and CJK wide forms, 0 for combining marks. */
static int cp_width(unsigned c)
{
    if ((c >= 0x0300 && c <= 0x036F) || (c >= 0x1160 && c <= 0x11FF) || c == 0x200B) return 0;
    if ((c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0x303E) ||
        (c >= 0x3041 && c <= 0x33FF) || (c >= 0x3400 && c <= 0x4DBF) ||
        (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA000 && c <= 0xA4CF) ||
        (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
        (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
        (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1FAFF) ||
        (c >= 0x20000 && c <= 0x3FFFD))
        return 2;
    return 1;
}

/* A token as at most 6 display columns: its code points (controls as '?', zero-width ones
 * dropped), cut to 5 columns plus "…" when longer. */
typedef struct label {
    unsigned cp[8];
    int n, width;
} label;

static label make_label(const char *s)
{
    unsigned cps[64];
    int n = 0, total = 0;
    for (size_t len = strlen(s); len && n < 64;) {
        size_t ok = tt_utf8_valid_prefix(s, len < 4 ? len : 4);
        unsigned c = (unsigned char)*s;
        int k = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if ((size_t)k > ok) {
            c = '?', k = 1; /* a bad byte */
        } else if (k > 1) {
            c &= 0x3Fu >> (k - 1);
            for (int i = 1; i < k; i++)
                c = c << 6 | ((unsigned char)s[i] & 0x3F);
        }
        s += k, len -= (size_t)k;
        if (c < 0x20 || (c >= 0x7F && c < 0xA0)) c = '?';
        if (cp_width(c)) cps[n++] = c, total += cp_width(c);
    }
    label lb = {.n = 0};
    int limit = total > 6 ? 5 : 6;
    for (int i = 0; i < n && lb.width + cp_width(cps[i]) <= limit; i++)
        lb.cp[lb.n++] = cps[i], lb.width += cp_width(cps[i]);
    if (total > 6) lb.cp[lb.n++] = 0x2026, lb.width++;
    return lb;
}

static void put_cp(FILE *f, unsigned c)
{
    if (c < 0x80)
        fputc((int)c, f);
    else if (c < 0x800)
        fprintf(f, "%c%c", 0xC0 | c >> 6, 0x80 | (c & 0x3F));
    else if (c < 0x10000)
        fprintf(f, "%c%c%c", 0xE0 | c >> 12, 0x80 | (c >> 6 & 0x3F), 0x80 | (c & 0x3F));
    else
        fprintf(f, "%c%c%c%c", 0xF0 | c >> 18, 0x80 | (c >> 12 & 0x3F), 0x80 | (c >> 6 & 0x3F),
                0x80 | (c & 0x3F));
}

void tt_render_terminal(FILE *out, const tt_attn_epoch *e, int probe, int layer, int head)
{
    TT_ASSERT_MSG(probe >= 0 && probe < e->n_probes && layer >= 0 && layer < e->L && head >= 0 &&
                      head < e->H,
                  "probe %d of %d, layer %d of %d, head %d of %d", probe, e->n_probes, layer, e->L,
                  head, e->H);
    static const char *shade[5] = {"  ", "░░", "▒▒", "▓▓", "██"};
    const tt_attn_probe *pr = &e->probes[probe];
    const int T = pr->T;
    label *lb = tt_xmalloc((size_t)(T ? T : 1) * sizeof *lb);
    int rw = 1, depth = 0;
    for (int t = 0; t < T; t++) {
        lb[t] = make_label(pr->tokens[t]);
        rw = lb[t].width > rw ? lb[t].width : rw;
        depth = lb[t].n > depth ? lb[t].n : depth;
    }
    /* key labels read downwards, one character per 2-column cell */
    for (int k = 0; k < depth; k++) {
        int last = -1;
        for (int t = 0; t < T; t++)
            if (lb[t].n > k) last = t;
        fprintf(out, "%*s", rw + 2, "");
        for (int t = 0; t <= last; t++) {
            if (lb[t].n <= k) {
                fputs("  ", out);
                continue;
            }
            put_cp(out, lb[t].cp[k]);
            if (t < last && cp_width(lb[t].cp[k]) == 1) fputc(' ', out);
        }
        fputc('\n', out);
    }
    const real *m = pr->w + ((size_t)layer * e->H + head) * T * T;
    for (int i = 0; i < T; i++) {
        for (int k = 0; k < lb[i].n; k++)
            put_cp(out, lb[i].cp[k]);
        fprintf(out, "%*s|", rw - lb[i].width + 1, "");
        for (int j = 0; j < T; j++) {
            double w = (double)m[(size_t)i * T + j];
            int q = !(w > 0) ? 0 : w >= 1 ? 4 : (int)(w * 5);
            fputs(shade[q], out);
        }
        fputs("|\n", out);
    }
    fprintf(out, "mean row entropy %.3f nats ", tt_attn_mean_entropy(e, probe, layer, head));
    if (e->causal) /* row i sees i + 1 keys */
        fprintf(out, "(uniform over each row's keys: mean of log 1 .. log %d = %.3f)", T,
                tt_attn_uniform_entropy(T, true));
    else
        fprintf(out, "(uniform: log %d = %.3f)", T, tt_attn_uniform_entropy(T, false));
    fputs("; rows query, columns key\n", out);
    fputs("weight: \"  \" <0.2  \"░░\" <0.4  \"▒▒\" <0.6  \"▓▓\" <0.8  \"██\" <=1\n", out);
    free(lb);
}
