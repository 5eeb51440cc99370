/* test_render.c: the renderers (train/report/render.h, maps.h): epoch files round-trip and
 * reject bad shapes and values with the file and JSON path; the heatmap SVG and the line plots
 * are well-formed XML with every cell, label and legend; index.html embeds exactly the epoch
 * files and the whole of viewer.html, .css and .js, loads nothing and carries the ready/error
 * hooks; the terminal view prints the expected shades; entropy and the most focused head. The
 * browser check of index.html is scripts/check_html.sh. */
#include "testutil.h"

#include "svg_testutil.h"

#include "train/report/render.h"
#include "train/report/viewer_assets.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* name in the test's folder (the fixture tt_tmp_setup) */
static const char *at(const char *name) { return tt_test_path(name); }

static void put(const char *name, const char *text)
{
    FILE *f = fopen(at(name), "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static char *get(const char *path)
{
    char err[256];
    char *s = tt_render_slurp(path, err, sizeof err);
    ck_assert_msg(s, "%s", err);
    return s;
}

static int count(const char *s, const char *what) { return tt_svg_count(s, what); }

static const char *PROBES[3][6] = {
    {"time flies like an arrow", "time", "flies", "like", "an", "arrow"},
    {"시간은 화살처럼 날아간다", "시간은", "화살처럼", "날아간다"},
    {"a<b c&d \"q\" it's </script>", "a<b", "c&d", "\"q\"", "it's", "</script>"}};
static const int NTOK[3] = {5, 3, 5};

/* Three probes (English, Korean, XML/HTML specials), rows softmax of a fixed pattern. */
static void make_epoch(tt_attn_epoch *e, int epoch, int L, int H)
{
    *e = (tt_attn_epoch){.epoch = epoch, .L = L, .H = H, .n_probes = 3};
    e->probes = tt_xcalloc(3, sizeof *e->probes);
    for (int p = 0; p < 3; p++) {
        tt_attn_probe *pr = &e->probes[p];
        int T = pr->T = NTOK[p];
        pr->text = tt_xstrdup(PROBES[p][0]);
        pr->tokens = tt_xcalloc((size_t)T, sizeof(char *));
        for (int t = 0; t < T; t++)
            pr->tokens[t] = tt_xstrdup(PROBES[p][t + 1]);
        pr->w = tt_xmalloc((size_t)L * H * T * T * sizeof(real));
        for (int r = 0; r < L * H * T; r++) {
            real *row = pr->w + (size_t)r * T;
            double z[8], s = 0;
            for (int j = 0; j < T; j++)
                s += z[j] = exp(3 * sin(1.7 * r + 0.9 * j + epoch));
            for (int j = 0; j < T; j++)
                row[j] = (real)(z[j] / s);
        }
    }
}

START_TEST(test_roundtrip)
{
    tt_attn_epoch e, back;
    char err[512];
    make_epoch(&e, 4, 2, 3);
    ck_assert_msg(!tt_attn_epoch_write(&e, at("epoch_004.json"), err, sizeof err), "%s", err);
    ck_assert_msg(!tt_attn_epoch_read(&back, at("epoch_004.json"), err, sizeof err), "%s", err);
    ck_assert_int_eq(back.epoch, 4);
    ck_assert_int_eq(back.L, 2);
    ck_assert_int_eq(back.H, 3);
    ck_assert_int_eq(back.n_probes, 3);
    for (int p = 0; p < 3; p++) {
        ck_assert_str_eq(back.probes[p].text, e.probes[p].text);
        ck_assert_int_eq(back.probes[p].T, NTOK[p]);
        for (int t = 0; t < NTOK[p]; t++)
            ck_assert_str_eq(back.probes[p].tokens[t], e.probes[p].tokens[t]);
        ck_assert_close("w", back.probes[p].w, e.probes[p].w, 2 * 3 * NTOK[p] * NTOK[p], 1e-6, 0);
    }
    char *text = get(at("epoch_004.json"));
    ck_assert_ptr_nonnull(strstr(text, "\"화살처럼\"")); /* UTF-8 as is, not \u escapes */
    ck_assert_ptr_nonnull(strstr(text, "\"\\\"q\\\"\""));
    free(text);
    /* atomic writes leave nothing else behind */
    DIR *d = opendir(tt_test_tmpdir());
    int files = 0;
    for (struct dirent *de; (de = readdir(d));)
        files += de->d_name[0] != '.';
    closedir(d);
    ck_assert_int_eq(files, 1);
    tt_attn_epoch_free(&e);
    tt_attn_epoch_free(&back);
    ck_assert_ptr_null(back.probes);
}
END_TEST

/* L = 1, H = 1, T = 2 with one part replaced */
static const char *GOOD = "{\"epoch\": 1, \"layers\": 1, \"heads\": 1, \"probes\": [{\"text\": "
                          "\"a b\", \"tokens\": [\"a\", \"b\"], \"attention\": [[[[[0.5, 0.5], "
                          "[1, 0]]]]]}]}";

static const struct {
    const char *from, *to, *want;
} BAD_FILES[] = {
    {"\"epoch\": 1, ", "", "missing key \"epoch\""},
    {"\"layers\": 1, ", "", "missing key \"layers\""},
    {"\"heads\": 1, ", "", "missing key \"heads\""},
    {"\"probes\"", "\"probe\"", "missing key \"probes\""},
    {"\"text\": \"a b\", ", "", "probes[0]: missing key \"text\""},
    {"\"tokens\"", "\"token\"", "probes[0]: missing key \"tokens\""},
    {"\"attention\"", "\"attn\"", "probes[0]: missing key \"attention\""},
    {"\"epoch\": 1", "\"epoch\": 1.5", "\"epoch\" must be an integer"},
    {"\"heads\": 1", "\"heads\": 0", "\"heads\" must be an integer"},
    {"\"layers\": 1", "\"layers\": 2", "probes[0].attention has 1 entries, expected 2"},
    {"[[[[[0.5, 0.5], [1, 0]]]]]", "[[[[[0.5, 0.5], [1, 0]]], [[[0.5, 0.5], [1, 0]]]]]",
     "probes[0].attention[0] has 2 entries, expected 1 (batch of one)"},
    {"\"heads\": 1", "\"heads\": 2", "probes[0].attention[0][0] has 1 entries, expected 2"},
    {"[\"a\", \"b\"]", "[\"a\", \"b\", \"c\"]",
     "probes[0].attention[0][0][0] has 2 entries, "
     "expected 3"},
    {"[0.5, 0.5]", "[0.5]", "probes[0].attention[0][0][0][0] has 1 entries, expected 2"},
    {"[1, 0]", "[1.5, 0]", "probes[0].attention[0][0][0][1][0] must be a number in [0, 1]"},
    {"[1, 0]", "[1, -0.1]", "probes[0].attention[0][0][0][1][1] must be a number in [0, 1]"},
    {"[1, 0]", "[1, 1e999]", "attention[0][0][0][1][1] must be a number in [0, 1]"},
    {"[1, 0]", "[1, \"0\"]", "attention[0][0][0][1][1] must be a number in [0, 1]"},
    {"[1, 0]", "[1, NaN]", "invalid JSON near 'NaN"},
    {"[\"a\", \"b\"]", "[\"a\", 2]", "probes[0].tokens[1] must be a string"},
    {"[\"a\", \"b\"]", "[]", "tokens must be an array of 1 to 4096 strings"},
    {"]}]}", "]}]", "invalid JSON"},
    {"{\"epoch\"", "[{\"epoch\"", "invalid JSON"},
};

START_TEST(test_malformed)
{
    char text[1024], err[512];
    const char *from = BAD_FILES[_i].from, *hit = strstr(GOOD, from);
    ck_assert_ptr_nonnull(hit);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(hit - GOOD), GOOD, BAD_FILES[_i].to,
             hit + strlen(from));
    put("bad.json", text);
    tt_attn_epoch e;
    err[0] = '\0';
    ck_assert_int_eq(tt_attn_epoch_read(&e, at("bad.json"), err, sizeof err), -1);
    ck_assert_msg(strstr(err, at("bad.json")) && strstr(err, BAD_FILES[_i].want),
                  "case %d: got \"%s\", want \"%s\"", _i, err, BAD_FILES[_i].want);
    ck_assert_ptr_null(e.probes);
    tt_attn_epoch_free(&e);
}
END_TEST

START_TEST(test_read_special)
{
    char err[512];
    tt_attn_epoch e;
    put("good.json", GOOD);
    ck_assert_msg(!tt_attn_epoch_read(&e, at("good.json"), err, sizeof err), "%s", err);
    tt_attn_epoch_free(&e);
    put("array.json", "[1]");
    ck_assert_int_eq(tt_attn_epoch_read(&e, at("array.json"), err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "JSON object"));
    put("empty.json", "");
    ck_assert_int_eq(tt_attn_epoch_read(&e, at("empty.json"), err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "invalid JSON"));
    ck_assert_int_eq(tt_attn_epoch_read(&e, at("missing.json"), err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "cannot open"));
}
END_TEST

START_TEST(test_heatmap_svg)
{
    tt_attn_epoch e;
    char err[512], title[64];
    make_epoch(&e, 7, 2, 3);
    ck_assert_msg(!tt_render_heatmap_svg(&e, at("e.svg"), err, sizeof err), "%s", err);
    char *svg = get(at("e.svg"));
    const char *why = tt_svg_xml_problem(svg);
    ck_assert_msg(!why, "%s", why);
    ck_assert_ptr_nonnull(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
    ck_assert_ptr_nonnull(strstr(svg, "epoch 7"));
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 3; h++) {
            snprintf(title, sizeof title, ">layer %d, head %d</text>", l, h);
            ck_assert_int_eq(count(svg, title), 3); /* one per probe */
        }
    ck_assert_int_eq(count(svg, "class=\"cell-title\""), 3 * 2 * 3);
    /* every label on both axes of every cell, and in the cell tooltips */
    ck_assert_int_ge(count(svg, ">a&lt;b</text>"), 2 * 2 * 3);
    ck_assert_int_ge(count(svg, ">&lt;/script&gt;</text>"), 2 * 2 * 3);
    ck_assert_ptr_nonnull(strstr(svg, ">c&amp;d</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">&quot;q&quot;</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">it&#39;s</text>"));
    ck_assert_ptr_nonnull(
        strstr(svg, "rotate(-90)\" dominant-baseline=\"middle\">화살처럼</text>"));
    ck_assert_ptr_nonnull(strstr(svg, "<title>flies -&gt; like: "));
    ck_assert_ptr_nonnull(strstr(svg, "probe 1: &quot;시간은 화살처럼 날아간다&quot;"));
    /* the legend: the ramp and its ticks */
    ck_assert_ptr_nonnull(strstr(svg, "<g id=\"legend\">"));
    ck_assert_ptr_nonnull(strstr(svg, "fill=\"url(#ramp)\""));
    ck_assert_ptr_nonnull(strstr(svg, ">0.5</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">1</text>"));
    ck_assert_int_eq(count(svg, "<rect x="), 3 * 2 * 3 + 1 + 2 * 3 * (25 + 9 + 25));
    free(svg);
    tt_attn_epoch_free(&e);
}
END_TEST

START_TEST(test_colour_ramp)
{
    char a[8], b[8], c[8];
    tt_render_color(0, a);
    tt_render_color(1, b);
    tt_render_color(NAN, c);
    ck_assert_str_eq(a, "#f7fbff");
    ck_assert_str_eq(b, "#08306b");
    ck_assert_str_eq(c, a);
    /* darker (lower sum of RGB) as the weight grows */
    int prev = 3 * 256;
    for (int k = 0; k <= 20; k++) {
        unsigned r, g, bl;
        tt_render_color(k / 20.0, a);
        ck_assert_int_eq(sscanf(a, "#%2x%2x%2x", &r, &g, &bl), 3);
        ck_assert_int_lt((int)(r + g + bl), prev);
        prev = (int)(r + g + bl);
    }
}
END_TEST

/* The <script id="tt-data"> element's JSON, parsed. */
static cJSON *embedded(const char *html)
{
    const char *open = "<script type=\"application/json\" id=\"tt-data\">";
    const char *s = strstr(html, open), *end;
    ck_assert_ptr_nonnull(s);
    s += strlen(open);
    ck_assert_ptr_nonnull(end = strstr(s, "</script>"));
    cJSON *j = cJSON_ParseWithLength(s, (size_t)(end - s));
    ck_assert_msg(j, "tt-data is not JSON");
    return j;
}

START_TEST(test_index_html)
{
    char err[512], name[32];
    tt_attn_epoch e;
    static const int order[3] = {2, 0, 1};
    for (int k = 0; k < 3; k++) {
        make_epoch(&e, order[k], 2, 2);
        snprintf(name, sizeof name, "epoch_%03d.json", order[k]);
        ck_assert_msg(!tt_attn_epoch_write(&e, at(name), err, sizeof err), "%s", err);
        tt_attn_epoch_free(&e);
    }
    put("epoch_003.json.tmp.99", "half a fi"); /* a dump being written: not epoch_*.json */
    put("notes.txt", "x");
    put("epoch_002.svg", "<svg/>");
    ck_assert_msg(!tt_render_index_html(tt_test_tmpdir(), err, sizeof err), "%s", err);
    char *html = get(at("index.html"));
    ck_assert_ptr_null(strstr(html, "http://"));
    ck_assert_ptr_null(strstr(html, "https://"));
    ck_assert_ptr_null(strstr(html, "<link"));
    ck_assert_ptr_null(strstr(html, " src="));
    ck_assert_ptr_nonnull(strstr(html, "document.body.dataset.ttReady = '1'"));
    ck_assert_ptr_nonnull(strstr(html, "window.onerror"));
    ck_assert_ptr_nonnull(strstr(html, "'unhandledrejection'"));
    ck_assert_int_eq(count(html, "dataset.ttError ="), 2);
    ck_assert_ptr_nonnull(strstr(html, "last epoch available: <b>2</b>"));
    ck_assert_int_eq(count(html, "<script"), 3);
    ck_assert_int_eq(count(html, "</script>"), 3); /* the token "</script>" did not end one */
    for (const char *id = "tt-epoch\0tt-play\0tt-layer\0tt-head\0tt-probe\0tt-tip\0"; *id;
         id += strlen(id) + 1)
        ck_assert_msg(strstr(html, id), "no #%s", id);
    cJSON *data = embedded(html), *epochs = cJSON_GetObjectItem(data, "epochs");
    ck_assert_int_eq(cJSON_GetArraySize(data), 1);
    ck_assert_int_eq(cJSON_GetArraySize(epochs), 3);
    for (int k = 0; k < 3; k++) {
        snprintf(name, sizeof name, "epoch_%03d.json", k);
        char *text = get(at(name));
        cJSON *file = cJSON_Parse(text), *item = cJSON_GetArrayItem(epochs, k);
        ck_assert_msg(cJSON_Compare(file, item, true), "epoch %d differs from %s", k, name);
        cJSON_Delete(file);
        free(text);
    }
    cJSON_Delete(data);
    free(html);
    /* a malformed file stops it, named */
    put("epoch_003.json", "{\"epoch\": 3}");
    ck_assert_int_eq(tt_render_index_html(tt_test_tmpdir(), err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "epoch_003.json: missing key \"layers\""));
    /* two files of one epoch */
    char *two = get(at("epoch_002.json"));
    put("epoch_003.json", two);
    free(two);
    ck_assert_int_eq(tt_render_index_html(tt_test_tmpdir(), err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "both hold epoch 2"));
    ck_assert_int_eq(tt_render_index_html(at("nowhere"), err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "nowhere: cannot open"));
}
END_TEST

START_TEST(test_index_html_empty)
{
    char err[512];
    ck_assert_msg(!tt_render_index_html(tt_test_tmpdir(), err, sizeof err), "%s", err);
    char *html = get(at("index.html"));
    cJSON *data = embedded(html);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(data, "epochs")), 0);
    ck_assert_ptr_nonnull(strstr(html, "No dumps yet."));
    cJSON_Delete(data);
    free(html);
}
END_TEST

/* Each viewer asset reaches the page: the embedded copy is the file on disk after its header
 * comment (paths from the repository root, where make test runs), and the page holds its first
 * and last line and its whole text; the template's text between the {{holes}} is there in order.
 * A file left out of the build, or one the page no longer writes, fails here. */
START_TEST(test_index_html_assets)
{
    static const struct {
        const char *path, *text;
        const size_t *len;
    } assets[] = {{"src/train/report/viewer.css", tt_viewer_css, &tt_viewer_css_len},
                  {"src/train/report/viewer.js", tt_viewer_js, &tt_viewer_js_len}};
    char err[512];
    ck_assert_msg(!tt_render_index_html(tt_test_tmpdir(), err, sizeof err), "%s", err);
    char *html = get(at("index.html"));
    for (int k = 0; k < 2; k++) {
        char *file = get(assets[k].path), *body = strstr(file, "\n\n");
        ck_assert_msg(body, "%s: no blank line after the header comment", assets[k].path);
        body += 2;
        size_t n = strlen(body);
        ck_assert_msg(n > 1 && body[n - 1] == '\n', "%s: empty or no final newline",
                      assets[k].path);
        ck_assert_msg(!strcmp(body, assets[k].text) && *assets[k].len == n,
                      "%s: %zu bytes after the header, %zu built in; HINT: make", assets[k].path, n,
                      *assets[k].len);
        const char *last = body + n - 1;
        while (last > body && last[-1] != '\n')
            last--;
        char *first_line = strndup(body, strcspn(body, "\n"));
        char *last_line = strndup(last, strcspn(last, "\n"));
        ck_assert_msg(strstr(html, first_line), "%s: first line not in the page: %s",
                      assets[k].path, first_line);
        ck_assert_msg(strstr(html, last_line), "%s: last line not in the page: %s", assets[k].path,
                      last_line);
        ck_assert_msg(strstr(html, assets[k].text), "%s: not whole in the page", assets[k].path);
        free(first_line);
        free(last_line);
        free(file);
    }
    const char *at_html = html;
    for (const char *s = tt_viewer_html, *open;; s = strstr(open, "}}") + 2) {
        open = strstr(s, "{{");
        size_t n = open ? (size_t)(open - s) : strlen(s);
        char *chunk = strndup(s, n);
        const char *found = strstr(at_html, chunk);
        ck_assert_msg(found, "viewer.html: this text is not in the page (in order): %s", chunk);
        at_html = found + n;
        free(chunk);
        if (!open) break;
    }
    ck_assert_int_eq(strlen(at_html), 0); /* the page ends where the template does */
    free(html);
}
END_TEST

START_TEST(test_terminal)
{
    static const real w[9] = {R(0.9), R(0.05), R(0.05), R(0.1), R(0.5),
                              R(0.4), R(0.25), R(0.1),  R(0.65)};
    char *tokens[3] = {"time", "arrow-like", "시간은"};
    tt_attn_probe pr = {.text = "x", .T = 3, .tokens = tokens, .w = (real *)w};
    tt_attn_epoch e = {.epoch = 1, .L = 1, .H = 1, .n_probes = 1, .probes = &pr};
    char *buf = NULL, want[2048];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tt_render_terminal(f, &e, 0, 0, 0);
    fclose(f);
    double h = 0;
    for (int i = 0; i < 3; i++)
        h += tt_attn_row_entropy(w + 3 * i, 3) / 3;
    snprintf(want, sizeof want,
             "        t a 시\n"
             "        i r 간\n"
             "        m r 은\n"
             "        e o\n"
             "          w\n"
             "          …\n"
             "time   |██    |\n"
             "arrow… |  ▒▒▒▒|\n"
             "시간은 |░░  ▓▓|\n"
             "mean row entropy %.3f nats (uniform: log 3 = 1.099); rows query, columns key\n"
             "weight: \"  \" <0.2  \"░░\" <0.4  \"▒▒\" <0.6  \"▓▓\" <0.8  \"██\" <=1\n",
             h);
    ck_assert_str_eq(buf, want);
    free(buf);
}
END_TEST

START_TEST(test_entropy_and_focus)
{
    real u[7], one[7] = {0, 0, R(1), 0, 0, 0, 0}, half[4] = {R(0.5), 0, R(0.5), 0};
    for (int j = 0; j < 7; j++)
        u[j] = R(1) / 7;
    ck_assert_double_eq_tol(tt_attn_row_entropy(u, 7), log(7), 1e-6);
    ck_assert_double_eq(tt_attn_row_entropy(one, 7), 0);
    ck_assert_double_eq_tol(tt_attn_row_entropy(half, 4), log(2), 1e-6);
    /* L = 2, H = 2, T = 4: uniform heads but (0,1) peaked and (1,0) one-hot */
    real w[2 * 2 * 16];
    for (int k = 0; k < 64; k++)
        w[k] = R(0.25);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            w[16 + 4 * i + j] = j == i ? R(0.7) : R(0.1);
            w[32 + 4 * i + j] = j == (i + 1) % 4 ? R(1) : R(0);
        }
    char *tokens[4] = {"a", "b", "c", "d"};
    tt_attn_probe pr = {.text = "a b c d", .T = 4, .tokens = tokens, .w = w};
    tt_attn_epoch e = {.epoch = 0, .L = 2, .H = 2, .n_probes = 1, .probes = &pr};
    int l = -1, h = -1;
    ck_assert_int_eq(tt_attn_most_focused(&e, 0, &l, &h), 0);
    ck_assert_int_eq(l, 1);
    ck_assert_int_eq(h, 0);
    for (int k = 32; k < 48; k++)
        w[k] = R(0.25); /* now (0,1) */
    tt_attn_most_focused(&e, 0, &l, &h);
    ck_assert_int_eq(l, 0);
    ck_assert_int_eq(h, 1);
    for (int k = 16; k < 32; k++)
        w[k] = R(0.25); /* all uniform: the first */
    tt_attn_most_focused(&e, 0, &l, &h);
    ck_assert_int_eq(l, 0);
    ck_assert_int_eq(h, 0);
}
END_TEST

/* Uniform rows of a causal map: row i sees i + 1 keys, so T = 4 gives the mean of log 1, log 2,
 * log 3 and log 4; a full map, log T. The terminal view and the epoch file carry the flag. */
START_TEST(test_uniform_causal)
{
    const double want = (log(1.0) + log(2.0) + log(3.0) + log(4.0)) / 4;
    ck_assert_double_eq_tol(tt_attn_uniform_entropy(4, true), want, 1e-12);
    ck_assert_double_eq_tol(tt_attn_uniform_entropy(4, false), log(4.0), 1e-12);
    ck_assert_double_eq(tt_attn_uniform_entropy(1, true), 0);
    /* a causal 4 x 4 map whose rows are uniform over their keys has exactly that entropy */
    real w[16] = {0};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j <= i; j++) w[4 * i + j] = R(1) / (real)(i + 1);
    char *tokens[4] = {"a", "b", "c", "d"};
    tt_attn_probe pr = {.text = "a b c d", .T = 4, .tokens = tokens, .w = w};
    tt_attn_epoch e = {.epoch = 2, .L = 1, .H = 1, .n_probes = 1, .probes = &pr, .causal = true};
    ck_assert_double_eq_tol(tt_attn_mean_entropy(&e, 0, 0, 0), want, 1e-6);
    char *buf = NULL, line[160];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tt_render_terminal(f, &e, 0, 0, 0);
    fclose(f);
    snprintf(line, sizeof line, "(uniform over each row's keys: mean of log 1 .. log 4 = %.3f)",
             want);
    ck_assert_msg(strstr(buf, line), "%s", buf);
    ck_assert_ptr_null(strstr(buf, "log 4 = 1.386"));
    free(buf);
    /* the flag round-trips; a file without it reads as not causal; a wrong type is an error */
    char err[512];
    ck_assert_msg(!tt_attn_epoch_write(&e, at("c.json"), err, sizeof err), "%s", err);
    tt_attn_epoch back;
    ck_assert_msg(!tt_attn_epoch_read(&back, at("c.json"), err, sizeof err), "%s", err);
    ck_assert(back.causal);
    tt_attn_epoch_free(&back);
    put("g.json", GOOD);
    ck_assert(!tt_attn_epoch_read(&back, at("g.json"), err, sizeof err) && !back.causal);
    tt_attn_epoch_free(&back);
    char bad[512];
    snprintf(bad, sizeof bad, "{\"causal\": 1, %s", GOOD + 1);
    put("b.json", bad);
    ck_assert_int_eq(tt_attn_epoch_read(&back, at("b.json"), err, sizeof err), -1);
    ck_assert_msg(strstr(err, "\"causal\" must be true or false"), "%s", err);
}
END_TEST

/* index.html shows the run's loss.svg (RUN/loss.svg next to RUN/attention/) inline, with no
 * XML prolog and no URL; without one it says so. The heatmap takes a caller's title. */
START_TEST(test_index_html_loss)
{
    char dir[512], err[512];
    tt_test_mkdir(dir, sizeof dir);
    char attention[600], loss[600], page[700];
    snprintf(attention, sizeof attention, "%s/attention", dir);
    snprintf(loss, sizeof loss, "%s/loss.svg", dir);
    snprintf(page, sizeof page, "%s/index.html", attention);
    ck_assert_int_eq(mkdir(attention, 0777), 0);
    ck_assert_msg(!tt_render_index_html(attention, err, sizeof err), "%s", err);
    char *html = get(page);
    ck_assert_ptr_nonnull(strstr(html, "No loss.svg yet"));
    free(html);
    static const double x[3] = {0, 1, 2}, y[3] = {3, 2, 1};
    const tt_plot_series sr = {.name = "loss <here>", .n = 3, .x = x, .y = y};
    const tt_plot_panel p = {.ylabel = "loss", .s = &sr, .n = 1};
    const tt_plot plot = {.title = "a run", .xlabel = "step", .panel = &p, .n_panels = 1};
    ck_assert_msg(!tt_render_plot_svg(loss, &plot, err, sizeof err), "%s", err);
    ck_assert_msg(!tt_render_index_html(attention, err, sizeof err), "%s", err);
    html = get(page);
    const char *svg = strstr(html, "<div id=\"tt-loss\">");
    ck_assert_ptr_nonnull(svg);
    ck_assert_ptr_nonnull(strstr(svg, "<svg width="));
    ck_assert_ptr_nonnull(strstr(svg, ">loss &lt;here&gt;</text>"));
    ck_assert_ptr_null(strstr(html, "<?xml"));
    ck_assert_ptr_null(strstr(html, "http"));
    ck_assert_ptr_null(strstr(html, "No loss.svg yet"));
    free(html);

    tt_attn_epoch e;
    make_epoch(&e, 1, 1, 1);
    ck_assert(!tt_render_heatmap_svg_titled(&e, "tau = 0.5 <sharp>", at("t.svg"), err,
                                            sizeof err));
    char *t = get(at("t.svg"));
    ck_assert_ptr_nonnull(strstr(t, ">tau = 0.5 &lt;sharp&gt;</text>"));
    ck_assert_ptr_null(strstr(t, "epoch 1<"));
    free(t);
    tt_attn_epoch_free(&e);
}
END_TEST

START_TEST(test_unwritable)
{
    tt_attn_epoch e;
    char err[512];
    make_epoch(&e, 0, 1, 1);
    const char *bad = "/nonexistent_tt_dir/x.out";
    ck_assert_int_eq(tt_attn_epoch_write(&e, bad, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, bad));
    ck_assert_int_eq(tt_render_heatmap_svg(&e, bad, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, bad));
    const tt_plot none = {.title = "t"};
    ck_assert_int_eq(tt_render_plot_svg(bad, &none, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "cannot create"));
    free(e.probes[0].tokens[0]);
    e.probes[0].tokens[0] = NULL;
    e.probes[0].T = 0; /* a probe without tokens is refused, naming it */
    ck_assert_int_eq(tt_attn_epoch_write(&e, at("x.json"), err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "probe 0"));
    e.probes[0].T = NTOK[0];
    tt_attn_epoch_free(&e);
}
END_TEST

Suite *render_suite(void)
{
    Suite *s = suite_create("render");
    TCase *tc = tcase_create("render");
    tcase_add_checked_fixture(tc, tt_tmp_setup, tt_tmp_teardown);
    tcase_add_test(tc, test_roundtrip);
    tcase_add_loop_test(tc, test_malformed, 0, (int)(sizeof BAD_FILES / sizeof BAD_FILES[0]));
    tcase_add_test(tc, test_read_special);
    tcase_add_test(tc, test_heatmap_svg);
    tcase_add_test(tc, test_colour_ramp);
    tcase_add_test(tc, test_index_html);
    tcase_add_test(tc, test_index_html_empty);
    tcase_add_test(tc, test_index_html_assets);
    tcase_add_test(tc, test_terminal);
    tcase_add_test(tc, test_entropy_and_focus);
    tcase_add_test(tc, test_uniform_causal);
    tcase_add_test(tc, test_index_html_loss);
    tcase_add_test(tc, test_unwritable);
    suite_add_tcase(s, tc);
    return s;
}
