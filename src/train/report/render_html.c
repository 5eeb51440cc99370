/* render_html.c: tt_render_index_html, the offline viewer: the page template viewer.html with
 * viewer.css and viewer.js (embedded at build time, viewer_assets.h), every epoch file as
 * JSON, drawn by the page's own script, and the run's loss.svg inline, so it opens from file://
 * with no server and no network. */
#include "train/report/render.h"
#include "train/report/viewer_assets.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct epoch_text {
    int epoch;
    char *name, *text;
} epoch_text;

static int by_epoch(const void *a, const void *b)
{
    const epoch_text *x = a, *y = b;
    return (x->epoch > y->epoch) - (x->epoch < y->epoch);
}

static void free_epochs(epoch_text *v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i].name), free(v[i].text);
    free(v);
}

/* Every DIR/epoch_*.json (that listed accepts, when not NULL), validated, sorted by its
 * "epoch"; NULL with err on the first bad one. */
static epoch_text *read_epochs(const char *dir, bool (*listed)(const char *, const char *),
                               int *n, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        tt_errorf(err, errlen, "%s: cannot open the attention directory: %s", dir, strerror(errno));
        return NULL;
    }
    int cap = 16;
    epoch_text *v = tt_xmalloc((size_t)cap * sizeof *v);
    *n = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (len < 11 || strncmp(de->d_name, "epoch_", 6) ||
            strcmp(de->d_name + len - 5, ".json") || (listed && !listed(dir, de->d_name)))
            continue;
        char *path = tt_xmalloc(strlen(dir) + len + 2);
        sprintf(path, "%s/%s", dir, de->d_name);
        tt_attn_epoch e;
        char *text = tt_render_slurp(path, err, errlen);
        int rc = text ? tt_attn_epoch_parse(&e, text, path, err, errlen) : -1;
        free(path);
        if (rc) {
            free(text);
            free_epochs(v, *n);
            closedir(d);
            return NULL;
        }
        if (*n == cap) v = tt_xrealloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[(*n)++] = (epoch_text){e.epoch, tt_xstrdup(de->d_name), text};
        tt_attn_epoch_free(&e);
    }
    closedir(d);
    qsort(v, (size_t)*n, sizeof *v, by_epoch);
    for (int i = 1; i < *n; i++)
        if (v[i].epoch == v[i - 1].epoch) {
            tt_errorf(err, errlen, "%s: %s and %s both hold epoch %d; HINT: keep one of them", dir,
                      v[i - 1].name, v[i].name, v[i].epoch);
            free_epochs(v, *n);
            return NULL;
        }
    return v;
}

/* What fills the template's {{name}} holes for one page. */
typedef struct page_parts {
    const char *dir, *when;
    const epoch_text *v;
    int n;
    const char *loss; /* the run's loss.svg, or NULL */
} page_parts;

/* loss.svg inline: from its <svg> on (no XML prolog), without the xmlns attribute (HTML's
 * parser puts an inline <svg> in the SVG namespace itself, and the page names no URL). */
static void put_loss(FILE *f, const char *svg)
{
    static const char xmlns[] = " xmlns=\"http://www.w3.org/2000/svg\"";
    const char *start = svg ? strstr(svg, "<svg") : NULL;
    if (!start) {
        fputs("<p>No loss.svg yet: the run writes it after each evaluation.</p>", f);
        return;
    }
    const char *ns = strstr(start, xmlns), *tag_end = strchr(start, '>');
    if (ns && tag_end && ns < tag_end) {
        fwrite(start, 1, (size_t)(ns - start), f);
        start = ns + strlen(xmlns);
    }
    fputs(start, f);
}

static void put_epochs(FILE *f, const epoch_text *v, int n)
{
    /* The files' own text, so every number is exactly theirs. '<' appears only inside strings
     * (the files are valid JSON), where \u003c means the same; so no "</script>" can end the
     * element early. */
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', f);
        for (const char *c = v[i].text; *c; c++)
            if (*c == '<')
                fputs("\\u003c", f);
            else
                fputc(*c, f);
    }
}

static bool is(const char *name, size_t len, const char *want)
{
    return len == strlen(want) && !memcmp(name, want, len);
}

/* One hole of viewer.html (its header lists them), name[0..len) without the braces. */
static void put_hole(FILE *f, const char *name, size_t len, const page_parts *p)
{
    if (is(name, len, "css")) {
        fwrite(tt_viewer_css, 1, tt_viewer_css_len, f);
    } else if (is(name, len, "js")) {
        fwrite(tt_viewer_js, 1, tt_viewer_js_len, f);
    } else if (is(name, len, "dir")) {
        tt_render_xml_puts(f, p->dir);
    } else if (is(name, len, "when")) {
        fputs(p->when, f);
    } else if (is(name, len, "dumps")) {
        if (p->n > 1)
            fprintf(f, "%d dumps, epochs %d to %d; ", p->n, p->v[0].epoch, p->v[p->n - 1].epoch);
        if (p->n)
            fprintf(f, "last epoch available: <b>%d</b>. ", p->v[p->n - 1].epoch);
        else
            fputs("No dumps yet. ", f);
    } else if (is(name, len, "epochs")) {
        put_epochs(f, p->v, p->n);
    } else if (is(name, len, "loss")) {
        put_loss(f, p->loss);
    } else if (is(name, len, "ramp")) {
        for (int k = 0; k < TT_RAMP_N; k++)
            fprintf(f, "%s[%d, %d, %d]", k ? ", " : "", tt_render_ramp[k][0], tt_render_ramp[k][1],
                    tt_render_ramp[k][2]);
    } else {
        TT_ASSERT_MSG(0, "viewer.html: unknown hole {{%.*s}}", (int)len, name);
    }
}

/* The template with its holes filled; the template is ours (built in), so a malformed hole is a
 * bug, not user input. */
static void put_page(FILE *f, const page_parts *p)
{
    const char *s = tt_viewer_html, *end = tt_viewer_html + tt_viewer_html_len;
    for (const char *open; (open = strstr(s, "{{"));) {
        const char *close = strstr(open + 2, "}}");
        TT_ASSERT_MSG(close, "viewer.html: \"{{\" without \"}}\"");
        fwrite(s, 1, (size_t)(open - s), f);
        put_hole(f, open + 2, (size_t)(close - open - 2), p);
        s = close + 2;
    }
    fwrite(s, 1, (size_t)(end - s), f);
}

int tt_render_index_html(const char *attention_dir, char *err, size_t errlen)
{
    return tt_render_index_html_of(attention_dir, NULL, err, errlen);
}

int tt_render_index_html_of(const char *attention_dir, bool (*listed)(const char *, const char *),
                            char *err, size_t errlen)
{
    int n = 0;
    epoch_text *v = read_epochs(attention_dir, listed, &n, err, errlen);
    if (!v) return -1;
    char *path = tt_xmalloc(strlen(attention_dir) + 16);
    sprintf(path, "%s/index.html", attention_dir);
    tt_atomic_file o;
    if (tt_atomic_open(&o, path, err, errlen)) {
        free(path);
        free_epochs(v, n);
        return -1;
    }
    FILE *f = o.f;
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
    char *loss_path = tt_xmalloc(strlen(attention_dir) + 16);
    sprintf(loss_path, "%s/../loss.svg", attention_dir);
    char *loss = tt_render_slurp(loss_path, NULL, 0); /* none yet: the page says so */
    put_page(f, &(page_parts){attention_dir, when, v, n, loss});
    int rc = tt_atomic_close(&o, true, err, errlen);
    free(loss);
    free(loss_path);
    free(path);
    free_epochs(v, n);
    return rc;
}
