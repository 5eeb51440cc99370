/* maps.c: attention epochs in memory and on disk (read, validate, write; maps.h) and the
 * numbers every view of them shows: row entropy and the most focused head. */
#include "train/report/maps.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void json_run(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
}

static void json_puts(FILE *f, const char *s)
{
    fputc('"', f);
    tt_utf8_runs(f, s, json_run);
    fputc('"', f);
}

const char *tt_json_num(char *out, const char *fmt, double v)
{
    if (!isfinite(v)) return strcpy(out, "null");
    snprintf(out, TT_JSON_NUM, fmt, v);
    return out;
}

static void epoch_json(FILE *f, const tt_attn_epoch *e)
{
    fprintf(f, "{\"epoch\": %d, \"layers\": %d, \"heads\": %d, \"causal\": %s,\n \"probes\": [",
            e->epoch, e->L, e->H, e->causal ? "true" : "false");
    for (int p = 0; p < e->n_probes; p++) {
        const tt_attn_probe *pr = &e->probes[p];
        const int T = pr->T;
        fputs(p ? ",\n  {\"text\": " : "\n  {\"text\": ", f);
        json_puts(f, pr->text ? pr->text : "");
        fputs(", \"tokens\": [", f);
        for (int t = 0; t < T; t++) {
            if (t) fputs(", ", f);
            json_puts(f, pr->tokens[t]);
        }
        fputs("],\n   \"attention\": [", f);
        for (int l = 0; l < e->L; l++) {
            fputs(l ? "],\n    [[" : "\n    [[", f);
            for (int h = 0; h < e->H; h++) {
                fputs(h ? ",\n      [" : "\n      [", f);
                const real *m = pr->w + ((size_t)l * e->H + h) * T * T;
                for (int i = 0; i < T; i++) {
                    fputs(i ? ", [" : "[", f);
                    for (int j = 0; j < T; j++) {
                        char num[TT_JSON_NUM];
                        fprintf(f, j ? ", %s" : "%s",
                                tt_json_num(num, "%.6g", (double)m[(size_t)i * T + j]));
                    }
                    fputc(']', f);
                }
                fputc(']', f);
            }
            fputs("]", f);
        }
        fputs(e->L ? "]]}" : "]}", f);
    }
    fputs("]}\n", f);
}

int tt_attn_epoch_write(const tt_attn_epoch *e, const char *path, char *err, size_t errlen)
{
    for (int p = 0; p < e->n_probes; p++)
        if (e->probes[p].T < 1)
            return tt_errorf(err, errlen,
                             "%s: probe %d (\"%s\") has no tokens; HINT: every data.probes entry "
                             "needs at least one word",
                             path, p, e->probes[p].text);
    tt_atomic_file o;
    if (tt_atomic_open(&o, path, err, errlen)) return -1;
    epoch_json(o.f, e);
    return tt_atomic_close(&o, true, err, errlen);
}

void tt_attn_epoch_free(tt_attn_epoch *e)
{
    for (int p = 0; e->probes && p < e->n_probes; p++) {
        tt_attn_probe *pr = &e->probes[p];
        for (int t = 0; pr->tokens && t < pr->T; t++)
            free(pr->tokens[t]);
        free(pr->tokens);
        free(pr->text);
        free(pr->w);
    }
    free(e->probes);
    *e = (tt_attn_epoch){0};
}

/* ---- reading ---- */

typedef struct rd {
    const char *path;
    char *err;
    size_t errlen;
} rd;

static int get_int(const rd *r, const cJSON *o, const char *key, int min, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        return tt_errorf(r->err, r->errlen, "%s: missing key \"%s\" (an integer >= %d)", r->path,
                         key, min);
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || d != floor(d) || d < min || d > 1e6)
        return tt_errorf(r->err, r->errlen, "%s: \"%s\" must be an integer in [%d, 1000000]",
                         r->path, key, min);
    *out = (int)d;
    return 0;
}

static int get_string(const rd *r, const cJSON *v, const char *what, char **out)
{
    if (!cJSON_IsString(v))
        return tt_errorf(r->err, r->errlen, "%s: %s must be a string", r->path, what);
    size_t n = strlen(v->valuestring);
    if (tt_utf8_valid_prefix(v->valuestring, n) != n)
        return tt_errorf(r->err, r->errlen, "%s: %s is not valid UTF-8", r->path, what);
    *out = tt_xstrdup(v->valuestring);
    return 0;
}

/* An array of exactly n items, or an error naming the JSON path and what was expected. */
static int want_array(const rd *r, const cJSON *a, int n, const char *what, const char *where)
{
    if (!cJSON_IsArray(a))
        return tt_errorf(r->err, r->errlen, "%s: %s must be an array (%s)", r->path, where, what);
    int got = cJSON_GetArraySize(a);
    if (got != n)
        return tt_errorf(r->err, r->errlen,
                         "%s: %s has %d entries, expected %d (%s); HINT: attention is "
                         "[layers][1][heads][T][T] with T the number of tokens",
                         r->path, where, got, n, what);
    return 0;
}

static int read_probe(const rd *r, const cJSON *o, int p, int L, int H, tt_attn_probe *pr)
{
    char where[96], what[128];
    snprintf(where, sizeof where, "probes[%d]", p);
    if (!cJSON_IsObject(o))
        return tt_errorf(r->err, r->errlen, "%s: %s must be an object", r->path, where);
    const char *keys[] = {"text", "tokens", "attention"};
    for (int k = 0; k < 3; k++)
        if (!cJSON_GetObjectItemCaseSensitive(o, keys[k]))
            return tt_errorf(r->err, r->errlen, "%s: %s: missing key \"%s\"", r->path, where,
                             keys[k]);
    snprintf(what, sizeof what, "%s.text", where);
    if (get_string(r, cJSON_GetObjectItemCaseSensitive(o, "text"), what, &pr->text)) return -1;
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(o, "tokens");
    int T = cJSON_GetArraySize(tok);
    if (!cJSON_IsArray(tok) || T < 1 || T > 4096)
        return tt_errorf(r->err, r->errlen, "%s: %s.tokens must be an array of 1 to 4096 strings",
                         r->path, where);
    pr->tokens = tt_xcalloc((size_t)T, sizeof(char *));
    pr->T = T;
    int t = 0;
    for (const cJSON *v = tok->child; v; v = v->next, t++) {
        snprintf(what, sizeof what, "%s.tokens[%d]", where, t);
        if (get_string(r, v, what, &pr->tokens[t])) return -1;
    }
    const cJSON *att = cJSON_GetObjectItemCaseSensitive(o, "attention");
    snprintf(where, sizeof where, "probes[%d].attention", p);
    if (want_array(r, att, L, "\"layers\"", where)) return -1;
    if ((double)L * H * T * T > (double)(1 << 28))
        return tt_errorf(r->err, r->errlen, "%s: probes[%d]: %d x %d x %d x %d weights is too many",
                         r->path, p, L, H, T, T);
    pr->w = tt_xmalloc((size_t)L * H * T * T * sizeof(real));
    real *w = pr->w;
    int l = 0;
    for (const cJSON *lv = att->child; lv; lv = lv->next, l++) {
        snprintf(where, sizeof where, "probes[%d].attention[%d]", p, l);
        if (want_array(r, lv, 1, "batch of one", where)) return -1;
        snprintf(where, sizeof where, "probes[%d].attention[%d][0]", p, l);
        if (want_array(r, lv->child, H, "\"heads\"", where)) return -1;
        int h = 0;
        for (const cJSON *hv = lv->child->child; hv; hv = hv->next, h++) {
            snprintf(where, sizeof where, "probes[%d].attention[%d][0][%d]", p, l, h);
            if (want_array(r, hv, T, "query rows, T = the number of tokens", where)) return -1;
            int i = 0;
            for (const cJSON *row = hv->child; row; row = row->next, i++) {
                snprintf(where, sizeof where, "probes[%d].attention[%d][0][%d][%d]", p, l, h, i);
                if (want_array(r, row, T, "key columns, T = the number of tokens", where))
                    return -1;
                int j = 0;
                for (const cJSON *v = row->child; v; v = v->next, j++) {
                    double d = v->valuedouble;
                    if (!cJSON_IsNumber(v) || !(d >= 0 && d <= 1))
                        return tt_errorf(r->err, r->errlen,
                                         "%s: %s[%d] must be a number in [0, 1] (an attention "
                                         "weight)",
                                         r->path, where, j);
                    *w++ = (real)d;
                }
            }
        }
    }
    return 0;
}

char *tt_render_slurp(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        tt_errorf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t n = 0, cap = 1 << 16, got;
    char *text = tt_xmalloc(cap);
    while ((got = fread(text + n, 1, cap - 1 - n, f)) > 0)
        if ((n += got) == cap - 1) text = tt_xrealloc(text, cap *= 2);
    bool bad = ferror(f);
    fclose(f);
    text[n] = 0;
    if (!bad && strlen(text) == n) return text;
    if (bad)
        tt_errorf(err, errlen, "%s: cannot read", path);
    else
        tt_errorf(err, errlen, "%s: NUL byte at offset %zu; expected JSON text", path,
                  strlen(text));
    free(text);
    return NULL;
}

int tt_attn_epoch_read(tt_attn_epoch *e, const char *path, char *err, size_t errlen)
{
    *e = (tt_attn_epoch){0};
    char *text = tt_render_slurp(path, err, errlen);
    int rc = text ? tt_attn_epoch_parse(e, text, path, err, errlen) : -1;
    free(text);
    return rc;
}

int tt_attn_epoch_parse(tt_attn_epoch *e, const char *text, const char *path, char *err,
                        size_t errlen)
{
    *e = (tt_attn_epoch){0};
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    rd r = {path, err, errlen};
    int rc = -1;
    if (!root) {
        const char *at = end ? end : text;
        int line = 1;
        for (const char *q = text; q < at; q++)
            line += *q == '\n';
        int near = (int)strcspn(at, "\r\n");
        tt_errorf(err, errlen, "%s:%d: invalid JSON near '%.*s'", path, line, near < 24 ? near : 24,
                  at);
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        tt_errorf(err, errlen, "%s: expected a JSON object at the top level", path);
        goto out;
    }
    if (get_int(&r, root, "epoch", 0, &e->epoch) || get_int(&r, root, "layers", 1, &e->L) ||
        get_int(&r, root, "heads", 1, &e->H))
        goto out;
    const cJSON *causal = cJSON_GetObjectItemCaseSensitive(root, "causal");
    if (causal && !cJSON_IsBool(causal)) {
        tt_errorf(err, errlen, "%s: \"causal\" must be true or false", path);
        goto out;
    }
    e->causal = cJSON_IsTrue(causal);
    const cJSON *probes = cJSON_GetObjectItemCaseSensitive(root, "probes");
    if (!cJSON_IsArray(probes) || !cJSON_GetArraySize(probes)) {
        tt_errorf(err, errlen, "%s: %s \"probes\" (a non-empty array of objects)", path,
                  probes ? "expected" : "missing key");
        goto out;
    }
    e->n_probes = cJSON_GetArraySize(probes);
    e->probes = tt_xcalloc((size_t)e->n_probes, sizeof *e->probes);
    int p = 0;
    for (const cJSON *o = probes->child; o; o = o->next, p++)
        if (read_probe(&r, o, p, e->L, e->H, &e->probes[p])) goto out;
    rc = 0;
out:
    if (rc) tt_attn_epoch_free(e);
    cJSON_Delete(root);
    return rc;
}

/* ---- numbers ---- */

double tt_attn_row_entropy(const real *row, int T)
{
    double h = 0;
    for (int j = 0; j < T; j++)
        if (row[j] > 0) h -= (double)row[j] * log((double)row[j]);
    return h;
}

double tt_attn_uniform_entropy(int T, bool causal)
{
    if (T < 1) return 0;
    if (!causal) return log(T);
    double s = 0;
    for (int i = 1; i <= T; i++) s += log(i);
    return s / T;
}

double tt_attn_mean_entropy(const tt_attn_epoch *e, int probe, int l, int h)
{
    const tt_attn_probe *pr = &e->probes[probe];
    const real *m = pr->w + ((size_t)l * e->H + h) * pr->T * pr->T;
    double s = 0;
    for (int i = 0; i < pr->T; i++)
        s += tt_attn_row_entropy(m + (size_t)i * pr->T, pr->T);
    return pr->T ? s / pr->T : 0;
}

int tt_attn_most_focused(const tt_attn_epoch *e, int probe, int *layer, int *head)
{
    TT_ASSERT_MSG(probe >= 0 && probe < e->n_probes, "probe %d of %d", probe, e->n_probes);
    double best = INFINITY;
    *layer = *head = 0;
    for (int l = 0; l < e->L; l++)
        for (int h = 0; h < e->H; h++) {
            double s = tt_attn_mean_entropy(e, probe, l, h);
            if (s < best) best = s, *layer = l, *head = h;
        }
    return 0;
}

