/* train_testutil.c: ./train driven in process, and its files (train_testutil.h). */
#include "train_testutil.h"

#include "testutil.h"
#include "train/cli.h"
#include "train/report/render.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void tt_test_put(const char *name, const char *text)
{
    FILE *f = fopen(tt_test_path(name), "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

void tt_test_tag_corpus(void)
{
    tt_test_tag_corpus_with("d");
}

void tt_test_tag_corpus_with(const char *fourth)
{
    const char *first[] = {"a", "b", "c", fourth}, *last[] = {"p", "q", "r"};
    char *train = tt_xcalloc(1, 1 << 16), *valid = tt_xcalloc(1, 1 << 14), line[128];
    for (int i = 0; i < 96; i++) {
        const char *f = first[i % 4], *l = last[(i / 4) % 3];
        snprintf(line, sizeof line, "%s x %s %s\tD %s N %s\n", f, l, f, i % 4 < 2 ? "V" : "N",
                 (i / 4) % 3 ? "N" : "V");
        strcat(i % 8 == 7 ? valid : train, line);
    }
    tt_test_put("train.txt", train);
    tt_test_put("valid.txt", valid);
    free(train);
    free(valid);
}

void tt_test_setup_tag_run(const char *config_fmt)
{
    tt_tmp_setup();
    tt_test_tag_corpus();
    char text[2048];
    snprintf(text, sizeof text, config_fmt, tt_test_tmpdir());
    tt_test_put("cfg.json", text);
}

const char *tt_test_output_dir(const char *name)
{
    static char buf[4][1200];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "output.dir=%s", tt_test_path(name));
    return b;
}

/* Reads the file at path into buf (len bytes, NUL-terminated). */
static void read_into(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

int tt_test_main(int (*main_fn)(int, char **), char *out, char *message, size_t len,
                 va_list ap)
{
    char *argv[32] = {"prog"};
    int argc = 1;
    for (const char *a; (a = va_arg(ap, const char *)) && argc < 31;) argv[argc++] = (char *)a;
    char outpath[4096], errpath[4096];
    snprintf(outpath, sizeof outpath, "%s", out ? tt_test_path("stdout.txt") : "/dev/null");
    snprintf(errpath, sizeof errpath, "%s", tt_test_path("stderr.txt"));
    fflush(stdout);
    fflush(stderr);
    int o = dup(1), e = dup(2);
    int of = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int ef = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(of, 1);
    dup2(ef, 2);
    int rc = main_fn(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(o, 1);
    dup2(e, 2);
    close(o), close(e), close(of), close(ef);
    if (out) read_into(outpath, out, len);
    read_into(errpath, message, len);
    return rc;
}

int tt_test_train(char *message, size_t len, ...)
{
    va_list ap;
    va_start(ap, len);
    int rc = tt_test_main(tt_train_main, NULL, message, len, ap);
    va_end(ap);
    return rc;
}

char *tt_test_metrics(const char *path, int from)
{
    char line[1024];
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no %s", path);
    char *out = tt_xcalloc(1, 1 << 20);
    while (fgets(line, sizeof line, f)) {
        char *e = strstr(line, "\"epoch\": ");
        ck_assert_ptr_nonnull(e);
        if (atoi(e + 9) < from) continue;
        char *t = strstr(line, ", \"tokens_per_s\""); /* not on the epoch-0 line */
        char *rest = t ? strchr(t + 2, ',') : NULL;
        if (t && !rest) rest = strchr(t, '}');
        if (t) memmove(t, rest, strlen(rest) + 1);
        ck_assert_msg(strlen(out) + strlen(line) < (1 << 20), "%s: too long", path);
        strcat(out, line);
    }
    fclose(f);
    return out;
}

void tt_test_same_lines(const char *label, const char *a, const char *b)
{
    int line = 1;
    size_t i = 0;
    for (; a[i] && a[i] == b[i]; i++) line += a[i] == '\n';
    if (a[i] == b[i]) return;
    size_t start = i;
    while (start > 0 && a[start - 1] != '\n') start--;
    ck_abort_msg("%s: line %d differs:\n%.300s\nvs\n%.300s", label, line, a + start, b + start);
}

cJSON *tt_test_viewer_data(const char *path)
{
    char err[512], *html = tt_render_slurp(path, err, sizeof err);
    ck_assert_msg(html, "%s", err);
    char *start = strstr(html, "id=\"tt-data\">"), *end = start ? strstr(start, "</script>")
                                                                : NULL;
    ck_assert_msg(start && end, "%s has no tt-data", path);
    *end = '\0';
    cJSON *data = cJSON_Parse(start + strlen("id=\"tt-data\">"));
    ck_assert_msg(data, "%s: tt-data is not JSON", path);
    free(html);
    return data;
}

static void snap_add(tt_test_snap *s, const void *p, size_t n)
{
    if (s->n + n > s->cap) s->buf = tt_xrealloc(s->buf, s->cap = 2 * (s->n + n) + 4096);
    memcpy(s->buf + s->n, p, n);
    s->n += n;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void tt_test_snapshot(tt_test_snap *s, const char *root, const char *rel)
{
    char dir[2400], p[2800];
    snprintf(dir, sizeof dir, "%s%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    char *names[256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && n < 256)
            names[n++] = tt_xstrdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    if (!n && !s->empty[0]) snprintf(s->empty, sizeof s->empty, "%s/", dir);
    for (int i = 0; i < n; i++) {
        char sub[1200];
        struct stat st;
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", names[i]);
        snprintf(p, sizeof p, "%s/%s", root, sub);
        ck_assert(lstat(p, &st) == 0);
        snap_add(s, sub, strlen(sub) + 1);
        if (S_ISDIR(st.st_mode)) tt_test_snapshot(s, root, sub);
        if (S_ISREG(st.st_mode)) {
            FILE *f = fopen(p, "rb");
            char chunk[4096];
            for (size_t got; f && (got = fread(chunk, 1, sizeof chunk, f)) > 0;)
                snap_add(s, chunk, got);
            if (f) fclose(f);
            if (!st.st_size && !s->empty[0]) snprintf(s->empty, sizeof s->empty, "%s", p);
        }
        free(names[i]);
    }
}

void tt_test_snap_unchanged(const char *label, const tt_test_snap *before, const char *root)
{
    tt_test_snap after = {0};
    tt_test_snapshot(&after, root, "");
    bool same = before->n == after.n && memcmp(before->buf, after.buf, before->n) == 0;
    free(after.buf);
    ck_assert_msg(same, "%s changed the folder %s", label, root);
}
