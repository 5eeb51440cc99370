/* docs_figures.c: the figures of README.md and the docs/ pages, recomputed from fresh runs
 * (make docs, make docs-check; scripts/docs.sh trains the runs). A figure is marked where it
 * stands:
 *   <!--fig SPEC-->0.9995<!--/fig-->
 * and SPEC names the run (a config under configs/, trained into DOCS/<run>/) and what to read:
 *   metric RUN EPOCH KEY DIGITS      KEY of the evaluation line of EPOCH ("last": the last one)
 *                                    of metrics.jsonl, with DIGITS decimals
 *   entropy RUN EPOCH min|max|mean DIGITS   the smallest, largest or mean head of that line's
 *                                    attention_entropy (the validation set's mean row entropy)
 *   entropy_drop RUN FROM TO DIGITS  the mean entropy at epoch FROM less that at epoch TO
 *   entropy_share RUN FROM MID TO DIGITS    entropy_drop FROM MID as a percentage of FROM TO
 *   attn RUN EPOCH PROBE LAYER HEAD QUERY KEY DIGITS
 *                                    the weight of word QUERY on word KEY (first occurrences) in
 *                                    probe PROBE's map, attention/epoch_EPOCH.json
 *   probe_entropy RUN EPOCH PROBE min|max DIGITS   over heads, a probe's mean row entropy
 *   attn_range RUN EPOCH PROBE QUERY KEY min|max DIGITS   the QUERY -> KEY weight over heads
 *   maxattn RUN EPOCH PROBE QUERY KEY DIGITS       the largest QUERY -> KEY weight of any head
 *   maxattn_head RUN EPOCH PROBE QUERY KEY         "layer L, head H" of that head
 *   table RUN                        the first table of DOCS/RUN/report.md (the study's headline)
 *   out RUN ARGS...                  a fenced block: "$ ./infer ARGS" and what it prints, with CK
 *                                    in ARGS the run's last checkpoint (shown as runs/RUN/...,
 *                                    run from DOCS/RUN/...); $TT_INFER is ./infer's path
 *   torch RUN [KEY|right]            scripts/torch_eval.py on the run's last checkpoint: the
 *                                    fenced block of what it prints, or the PyTorch column of
 *                                    row KEY (valid_loss), or the targets it gets right ("4053
 *                                    of 4055"); not checked, and said so, without PyTorch
 *   log RUN                          a fenced block: "$ ./train configs/RUN.json" and what the
 *                                    docs run printed (DOCS/RUN.log), its folder shown as
 *                                    runs/RUN; its timings (N tok/s, N.Ns) are not compared
 *   config                           the config reference (tt_config_reference), names no run
 *   suites                           the test suites, a line each, from tests/suites.h (suite
 *                                    NAME is tests/test_NAME.c), for tests/README.md; no run
 * Usage: docs_figures runs|check|fill README DOCS. runs prints the runs the figures need; check
 * prints each figure that differs and exits 1 if any; fill rewrites README with the figures. */
#include "../tests/suites.h"
#include "train/config/config.h"
#include "train/report/maps.h"
#include "train/report/render.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPEN "<!--fig "
#define CLOSE "<!--/fig-->"
#define MAX_ARGS 12

static const char *docs;

static _Noreturn void die(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "docs_figures: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    exit(2);
}

static char *slurp(const char *run, const char *file)
{
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/%s/%s", docs, run, file);
    char *t = tt_render_slurp(path, err, sizeof err);
    if (!t) die("%s%s", err, "");
    return t;
}

/* The evaluation line of metrics.jsonl for epoch ("last" or a number), parsed. */
static cJSON *eval_line(const char *run, const char *epoch)
{
    char *text = slurp(run, "metrics.jsonl");
    cJSON *found = NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *e = cJSON_GetObjectItem(o, "epoch");
        bool want = cJSON_GetObjectItem(o, "valid_acc") &&
                    (!strcmp(epoch, "last") || (e && e->valueint == atoi(epoch)));
        if (want) cJSON_Delete(found), found = o;
        else cJSON_Delete(o);
    }
    free(text);
    if (!found) die("%s: no evaluation line for epoch %s", run, epoch);
    return found;
}

/* The smallest, largest or mean head of an evaluation line's attention_entropy. */
static double entropy(const char *run, const char *epoch, const char *which)
{
    cJSON *o = eval_line(run, epoch);
    double v = !strcmp(which, "min") ? INFINITY : !strcmp(which, "max") ? -INFINITY : 0;
    int n = 0;
    const cJSON *layer, *head;
    cJSON_ArrayForEach(layer, cJSON_GetObjectItem(o, "attention_entropy"))
        cJSON_ArrayForEach(head, layer) {
            double x = head->valuedouble;
            v = !strcmp(which, "min") ? fmin(v, x) : !strcmp(which, "max") ? fmax(v, x) : v + x;
            n++;
        }
    cJSON_Delete(o);
    if (!n) die("%s: no attention_entropy at epoch %s", run, epoch);
    return strcmp(which, "mean") ? v : v / n;
}

static tt_attn_epoch read_epoch(const char *run, const char *epoch)
{
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/%s/attention/epoch_%03d.json", docs, run, atoi(epoch));
    tt_attn_epoch e;
    if (tt_attn_epoch_read(&e, path, err, sizeof err)) die("%s%s", err, "");
    return e;
}

static int token(const tt_attn_probe *p, const char *word)
{
    for (int t = 0; t < p->T; t++)
        if (!strcmp(p->tokens[t], word)) return t;
    die("no word \"%s\" in the probe \"%s\"", word, p->text);
}

static const tt_attn_probe *probe(const tt_attn_epoch *e, const char *i)
{
    int p = atoi(i);
    if (p < 0 || p >= e->n_probes) die("no probe %s%s", i, "");
    return &e->probes[p];
}

/* s with every "CK" word replaced by ck, into buf. */
static void with_ck(const char *s, const char *ck, char *buf, size_t len)
{
    size_t n = 0;
    for (const char *p = s; *p && n + 1 < len;) {
        bool word = !strncmp(p, "CK", 2) && (p == s || p[-1] == ' ') && (!p[2] || p[2] == ' ');
        n += (size_t)snprintf(buf + n, len - n, "%s", word ? ck : (char[2]){*p, 0});
        p += word ? 2 : 1;
    }
}

/* The docs run's last checkpoint: its path (ck) and the one a user's own run has (shown). */
static void last_checkpoint(const char *run, char *ck, size_t ck_len, char *shown, size_t len)
{
    char dir[2048], cmd[4096], line[4096];
    snprintf(dir, sizeof dir, "%s/%s/checkpoints", docs, run);
    snprintf(cmd, sizeof cmd, "ls %s | tail -1", dir);
    FILE *p = popen(cmd, "r");
    if (!p || !fgets(line, sizeof line, p)) die("%s: no checkpoint%s", dir, "");
    pclose(p);
    line[strcspn(line, "\n")] = '\0';
    snprintf(ck, ck_len, "%s/%s", dir, line);
    snprintf(shown, len, "runs/%s/checkpoints/%s", run, line);
}

/* What cmd prints (its stdout, and its stderr too with `2>&1` in it), the docs run's
 * checkpoint path ck written as the user's (shown) wherever it appears; its exit status. */
static int capture(const char *cmd, const char *ck, const char *shown, char *out, size_t len)
{
    char line[4096];
    size_t n = 0;
    out[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (!p) die("cannot run %s%s", cmd, "");
    while (fgets(line, sizeof line, p) && n < len) {
        char *at = strstr(line, ck);
        if (at) {
            char rest[4096];
            snprintf(rest, sizeof rest, "%s", at + strlen(ck));
            snprintf(at, sizeof line - (size_t)(at - line), "%s%s", shown, rest);
        }
        n += (size_t)snprintf(out + n, len - n, "%s", line);
    }
    return pclose(p);
}

/* "out": ./infer run on the docs run's last checkpoint; the block shows the path a user's own
 * run has (runs/RUN/...). */
static void infer_block(const char *run, const char *args, char *out, size_t len)
{
    char ck[8192], shown[8192], cmd[40000];
    last_checkpoint(run, ck, sizeof ck, shown, sizeof shown);
    const char *infer = getenv("TT_INFER") ? getenv("TT_INFER") : "./infer";
    char real_args[16384], shown_args[16384];
    with_ck(args, ck, real_args, sizeof real_args);
    with_ck(args, shown, shown_args, sizeof shown_args);
    snprintf(cmd, sizeof cmd, "%.1024s %s 2>/dev/null", infer, real_args);
    size_t n = (size_t)snprintf(out, len, "\n```\n$ ./infer %s\n", shown_args);
    if (capture(cmd, ck, shown, out + n, len - n) != 0) die("%s: failed%s", cmd, "");
    n += strlen(out + n);
    snprintf(out + n, len > n ? len - n : 0, "```\n");
}

/* "torch": scripts/torch_eval.py (stock PyTorch modules) on the docs run's last checkpoint,
 * once per run, by Debian's interpreter ($TT_TORCH_PYTHON instead, if set). Its own float32
 * kernels are pinned as the runs' are (ATen's AVX2 ones, 2 threads; OPENBLAS_CORETYPE comes
 * from docs.sh). NULL when the interpreter has no PyTorch: make test must not need it, so those
 * figures are then reported as not checked. */
static const char *torch_python(void)
{
    const char *py = getenv("TT_TORCH_PYTHON");
    return py && *py ? py : "/usr/bin/python3";
}

static const char *torch_text(const char *run)
{
    static char runs[8][64], texts[8][4096];
    static int n_runs, have = -1;
    char ck[8192], shown[8192], cmd[20000];
    for (int i = 0; i < n_runs; i++)
        if (!strcmp(runs[i], run)) return texts[i];
    if (have < 0) {
        snprintf(cmd, sizeof cmd, "%.4000s -c 'import numpy, torch' 2>/dev/null", torch_python());
        have = system(cmd) == 0;
    }
    if (!have) return NULL;
    if (n_runs == 8) die("more than 8 runs with PyTorch figures%s%s", "", "");
    last_checkpoint(run, ck, sizeof ck, shown, sizeof shown);
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=2 ATEN_CPU_CAPABILITY=avx2 %.4000s scripts/torch_eval.py %s 2>&1",
             torch_python(), ck);
    char *t = texts[n_runs];
    if (capture(cmd, ck, shown, t, sizeof texts[0]) != 0) die("%s failed:\n%s", cmd, t);
    snprintf(runs[n_runs], sizeof runs[0], "%s", run);
    n_runs++;
    return t;
}

/* A torch figure: the block (what= NULL), the PyTorch column of the row `what`
 * ("valid_loss"), or "right" (the targets it gets right: "4053 of 4055"). false when PyTorch
 * is missing. */
static bool torch_figure(const char *run, const char *what, char *out, size_t len)
{
    const char *t = torch_text(run);
    if (!t) return false;
    if (!what) {
        char ck[8192], shown[8192];
        last_checkpoint(run, ck, sizeof ck, shown, sizeof shown);
        snprintf(out, len, "\n```\n$ python3 scripts/torch_eval.py %s\n%s```\n", shown, t);
        return true;
    }
    /* "right: 4053 of 4055 targets, ...", or "valid_loss   0.002891649   0.002891610  ..." */
    bool right = !strcmp(what, "right");
    char key[80];
    snprintf(key, sizeof key, "\n%s%s", right ? "right:" : what, " ");
    const char *at = strstr(t, key);
    if (!at) die("%s: torch_eval.py printed no \"%s\" line", run, what);
    at += strlen(key);
    at += strspn(at, " ");
    const char *end = right ? strstr(at, " targets") : at + strcspn(at, " \n");
    if (!end || end == at) die("%s: torch_eval.py's \"%s\" line has no figure", run, what);
    snprintf(out, len, "%.*s", (int)(end - at), at);
    return true;
}

/* "log": the docs run's output as a user's run prints it. */
static void log_block(const char *run, char *out, size_t len)
{
    char path[4096], err[1024], from[4096], to[256];
    snprintf(path, sizeof path, "%s/%s.log", docs, run);
    char *text = tt_render_slurp(path, err, sizeof err);
    if (!text) die("%s%s", err, "");
    snprintf(from, sizeof from, "%s/%s", docs, run);
    snprintf(to, sizeof to, "runs/%s", run);
    size_t n = (size_t)snprintf(out, len, "\n```\n$ ./train configs/%s.json\n", run);
    for (const char *p = text; *p && n < len;) {
        bool at = !strncmp(p, from, strlen(from));
        n += (size_t)snprintf(out + n, len - n, "%s", at ? to : (char[2]){*p, 0});
        p += at ? strlen(from) : 1;
    }
    snprintf(out + n, n < len ? len - n : 0, "```\n");
    free(text);
}

/* s with the figures that time a run (a number before " tok/s", or before an "s" that ends a
 * line or precedes ':') written as '#', into out: what "log" compares. */
static void untimed(const char *s, char *out, size_t len)
{
    size_t n = 0;
    while (*s && n + 1 < len) {
        size_t d = strspn(s, "0123456789.");
        bool timing = d && (!strncmp(s + d, " tok/s", 6) ||
                            (s[d] == 's' && (s[d + 1] == '\n' || s[d + 1] == ':')));
        if (timing)
            out[n++] = '#', s += d;
        else if (d)
            n += (size_t)snprintf(out + n, len - n, "%.*s", (int)d, s), s += d;
        else
            out[n++] = *s++;
    }
    out[n < len ? n : len - 1] = '\0';
}

/* "suites": the Check suites of tests/suites.h as a table, in the runner's order. */
static void suites_table(char *out, size_t len)
{
    size_t n = (size_t)snprintf(out, len,
                                "\n| suite | file | builds | what it tests |\n"
                                "| --- | --- | --- | --- |\n");
#define ROW(name, builds, what)                                                                    \
    n += (size_t)snprintf(out + n, n < len ? len - n : 0,                                          \
                          "| `%s` | [test_%s.c](test_%s.c) | %s | %s |\n", #name, #name, #name,    \
                          builds, what);
#define ALL(name, what) ROW(name, "float32, float64", what)
#define F64(name, what) ROW(name, "float64", what)
#define F32(name, what) ROW(name, "float32", what)
#define CUDA(name, what) ROW(name, "`make CUDA=1`", what)
    TT_SUITES(ALL) TT_SUITES_F64(F64) TT_SUITES_F32(F32) TT_SUITES_CUDA(CUDA)
#undef ROW
#undef ALL
#undef F64
#undef F32
#undef CUDA
}

/* The figure of one spec (argv-like), written into out. */
static void figure(char **a, int n, char *out, size_t len)
{
    const char *kind = a[0];
    int digits = atoi(a[n - 1]);
    double v = NAN;
    if (!strcmp(kind, "table") && n == 2) {
        char *text = slurp(a[1], "report.md"), *start = strstr(text, "\n|");
        if (!start) die("%s/report.md: no table", a[1], "");
        char *end = strstr(start + 1, "\n\n");
        if (end) end[0] = '\0';
        snprintf(out, len, "\n%s\n", start + 1);
        free(text);
        return;
    } else if (!strcmp(kind, "metric") && n == 5) {
        cJSON *o = eval_line(a[1], a[2]);
        const cJSON *k = cJSON_GetObjectItem(o, a[3]);
        if (!cJSON_IsNumber(k)) die("%s: no number %s in the evaluation line", a[1], a[3]);
        v = k->valuedouble;
        cJSON_Delete(o);
    } else if (!strcmp(kind, "entropy") && n == 5) {
        v = entropy(a[1], a[2], a[3]);
    } else if (!strcmp(kind, "entropy_drop") && n == 5) {
        v = entropy(a[1], a[2], "mean") - entropy(a[1], a[3], "mean");
    } else if (!strcmp(kind, "entropy_share") && n == 6) {
        double from = entropy(a[1], a[2], "mean");
        v = 100 * (from - entropy(a[1], a[3], "mean")) / (from - entropy(a[1], a[4], "mean"));
    } else if (!strcmp(kind, "attn_range") && n == 8) {
        tt_attn_epoch e = read_epoch(a[1], a[2]);
        const tt_attn_probe *p = probe(&e, a[3]);
        int T = p->T, q = token(p, a[4]), k = token(p, a[5]);
        bool min = !strcmp(a[6], "min");
        v = min ? INFINITY : -INFINITY;
        for (int l = 0; l < e.L; l++)
            for (int h = 0; h < e.H; h++) {
                double x = (double)p->w[(((size_t)l * e.H + h) * T + q) * T + k];
                v = min ? fmin(v, x) : fmax(v, x);
            }
        tt_attn_epoch_free(&e);
    } else if ((!strcmp(kind, "attn") && n == 9) || (!strcmp(kind, "probe_entropy") && n == 6) ||
               (!strncmp(kind, "maxattn", 7) && n >= 6)) {
        tt_attn_epoch e = read_epoch(a[1], a[2]);
        const tt_attn_probe *p = probe(&e, a[3]);
        int T = p->T, best_l = 0, best_h = 0;
        if (!strcmp(kind, "attn")) {
            int l = atoi(a[4]), h = atoi(a[5]);
            if (l < 0 || l >= e.L || h < 0 || h >= e.H) die("no layer %s, head %s", a[4], a[5]);
            v = (double)p->w[(((size_t)l * e.H + h) * T + token(p, a[6])) * T + token(p, a[7])];
        } else if (!strcmp(kind, "probe_entropy")) {
            bool min = !strcmp(a[4], "min");
            v = min ? INFINITY : -INFINITY;
            for (int l = 0; l < e.L; l++)
                for (int h = 0; h < e.H; h++) {
                    double x = tt_attn_mean_entropy(&e, atoi(a[3]), l, h);
                    v = min ? fmin(v, x) : fmax(v, x);
                }
        } else {
            int q = token(p, a[4]), k = token(p, a[5]);
            v = -1;
            for (int l = 0; l < e.L; l++)
                for (int h = 0; h < e.H; h++) {
                    double x = (double)p->w[(((size_t)l * e.H + h) * T + q) * T + k];
                    if (x > v) v = x, best_l = l, best_h = h;
                }
            if (!strcmp(kind, "maxattn_head")) {
                snprintf(out, len, "layer %d, head %d", best_l, best_h);
                tt_attn_epoch_free(&e);
                return;
            }
        }
        tt_attn_epoch_free(&e);
    } else {
        die("unknown figure \"%s\" (or a wrong number of arguments)%s", kind, "");
    }
    snprintf(out, len, "%.*f", digits, v);
}

/* Says that the figure `spec` of page differs: the figure itself, or for a block (a table, a
 * program's output) its first line that differs. */
static void stale_line(const char *page, const char *old, size_t old_len, const char *got,
                       int spec_len, const char *spec)
{
    if (!memchr(old, '\n', old_len) && !strchr(got, '\n')) {
        printf("STALE: %s says \"%.*s\", the build gives \"%s\" (%.*s)\n", page, (int)old_len,
               old, got, spec_len, spec);
        return;
    }
    const char *o = old, *g = got, *end = old + old_len;
    int line = 1;
    for (;; line++) {
        const char *nl = memchr(o, '\n', (size_t)(end - o));
        size_t ol = (size_t)((nl ? nl : end) - o), gl = strcspn(g, "\n");
        bool last = !nl;
        if (ol != gl || strncmp(o, g, ol) || last != !g[gl]) {
            printf("STALE: %s (%.*s), line %d of the block says \"%.*s\", the build gives "
                   "\"%.*s\"\n", page, spec_len, spec, line, (int)ol, o, (int)gl, g);
            return;
        }
        if (last) return;
        o += ol + 1, g += gl + 1;
    }
}

/* The figure of a page's marker (args, na: its spec split; spec: its text, quotes kept, up to
 * spec_end; old: the figure the page holds), into got; false for a PyTorch figure left
 * unchecked (got then keeps the page's). */
static bool page_figure(char **args, int na, const char *spec, const char *spec_end,
                        const char *old, size_t old_len, char *got, size_t len)
{
    if (na == 1 && !strcmp(args[0], "suites")) {
        suites_table(got, len);
    } else if (na == 1 && !strcmp(args[0], "config")) {
        got[0] = '\n';
        tt_config_reference(got + 1, len - 1);
    } else if (!strcmp(args[0], "log") && na == 2) {
        /* a page keeps its own timings when nothing else differs */
        static char was[65536], now[65536];
        log_block(args[1], got, len);
        snprintf(now, sizeof now, "%.*s", (int)old_len, old);
        untimed(now, was, sizeof was);
        untimed(got, now, sizeof now);
        if (!strcmp(was, now)) snprintf(got, len, "%.*s", (int)old_len, old);
    } else if (!strcmp(args[0], "torch") && na <= 3) {
        if (!torch_figure(args[1], na == 3 ? args[2] : NULL, got, len)) {
            snprintf(got, len, "%.*s", (int)old_len, old);
            return false;
        }
    } else if (!strcmp(args[0], "out")) {
        char raw[512]; /* the arguments as written, quotes and spaces kept */
        const char *from = strstr(spec, args[1]) + strlen(args[1]);
        snprintf(raw, sizeof raw, "%.*s", (int)(spec_end - from), from);
        infer_block(args[1], raw + strspn(raw, " "), got, len);
    } else {
        figure(args, na, got, len);
    }
    return true;
}

int main(int argc, char **argv)
{
    if (argc != 4) die("usage: docs_figures runs|check|fill README DOCS%s%s", "", "");
    const char *mode = argv[1], *readme = argv[2];
    docs = argv[3];
    char err[1024];
    char *text = tt_render_slurp(readme, err, sizeof err);
    if (!text) die("%s%s", err, "");
    size_t cap = strlen(text) * 2 + 65536, n = 0;
    char *outbuf = tt_xmalloc(cap), runs[64][64];
    int n_runs = 0, stale = 0, count = 0, unchecked = 0;
    char *p = text;
    for (char *at; (at = strstr(p, OPEN));) {
        char *spec_end = strstr(at, "-->"), *close = spec_end ? strstr(spec_end, CLOSE) : NULL;
        if (!close) die("%s: a figure marker without its end: %.40s", readme, at);
        char spec[512], *args[MAX_ARGS];
        static char got[65536];
        size_t sl = (size_t)(spec_end - at) - strlen(OPEN);
        snprintf(spec, sizeof spec, "%.*s", (int)sl, at + strlen(OPEN));
        int na = 0;
        for (char *t = strtok(spec, " "); t && na < MAX_ARGS; t = strtok(NULL, " ")) args[na++] = t;
        bool no_run = na == 1 && (!strcmp(args[0], "config") || !strcmp(args[0], "suites"));
        if (na < 2 && !no_run) die("%s: an empty figure marker%s", readme, "");
        bool seen = no_run;
        for (int i = 0; i < n_runs && !seen; i++) seen = !strcmp(runs[i], args[1]);
        if (!seen && n_runs < 64) snprintf(runs[n_runs++], 64, "%s", args[1]);
        const char *old = spec_end + 3;
        size_t old_len = (size_t)(close - old);
        bool checked = true;
        if (!strcmp(mode, "runs")) got[0] = '\0';
        else checked = page_figure(args, na, at + strlen(OPEN), spec_end, old, old_len, got,
                                   sizeof got);
        count += checked;
        unchecked += !checked;
        if (!strcmp(mode, "check") && (strlen(got) != old_len || strncmp(got, old, old_len))) {
            stale_line(readme, old, old_len, got, (int)sl, at + strlen(OPEN));
            stale++;
        }
        n += (size_t)snprintf(outbuf + n, cap - n, "%.*s%s", (int)(old - p), p, got);
        p = close;
    }
    n += (size_t)snprintf(outbuf + n, cap - n, "%s", p);
    if (unchecked)
        printf("docs_figures: %d PyTorch figures of %s NOT CHECKED: %s cannot import torch and "
               "numpy (Debian: apt-get install python3-torch; TT_TORCH_PYTHON=PATH for another "
               "interpreter)\n",
               unchecked, readme, torch_python());
    if (!strcmp(mode, "runs")) {
        for (int i = 0; i < n_runs; i++) printf("%s\n", runs[i]);
    } else if (!strcmp(mode, "fill")) {
        tt_atomic_file f;
        if (tt_atomic_open(&f, readme, err, sizeof err)) die("%s%s", err, "");
        bool ok = fwrite(outbuf, 1, n, f.f) == n;
        if (tt_atomic_close(&f, ok, err, sizeof err)) die("%s%s", err, "");
        printf("docs_figures: %d figures of %s filled from %s\n", count, readme, docs);
    } else if (!strcmp(mode, "check")) {
        printf("docs_figures: %d of %d figures of %s differ from the runs in %s\n", stale, count,
               readme, docs);
    } else {
        die("%s: unknown mode; allowed: runs, check, fill%s", mode, "");
    }
    free(outbuf);
    free(text);
    return stale ? 1 : 0;
}
