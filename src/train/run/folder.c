/* folder.c: a run's folder (output.dir). RUN_FILES lists, once, every file a run writes there,
 * so that the check before a run, --overwrite's removal and a resume's rewind agree on what
 * belongs to a run: config.json, metrics.jsonl, loss.svg, checkpoints/epoch_NNN.safetensors,
 * attention/epoch_NNN.json|svg and attention/index.html; a study's report.md,
 * worked_examples.md, CSV and SVG files, and its trainings' folders train_<variant>/, a run
 * folder each. Any other file there
 * is the user's: it is never removed, and it does not make a folder a run's. A temporary file
 * of an atomic write (NAME.tmp.XXXXXX) that a killed process left is removed when the next run
 * claims the folder: under the folder's lock (tt_run_folder_lock), no live writer owns one. */
#define _DEFAULT_SOURCE /* flock */
#include "train/report/render.h"
#include "train/run/run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_LEN (2 * TT_CONFIG_PATH + 256)

/* Where a run writes, relative to its folder, and the names it gives its files there
 * (fnmatch patterns); the temporary file of an atomic write, NAME.tmp.XXXXXX (mkstemp's
 * letters and digits; older versions wrote NAME.tmp.PID), counts as NAME. */
static const struct {
    const char *sub;
    const char *names[7];
} RUN_FILES[] = {
    {"", {"config.json", "metrics.jsonl", "report.md", "worked_examples.md", "*.csv", "*.svg"}},
    {"checkpoints", {"epoch_[0-9][0-9][0-9]*.safetensors"}},
    {"attention", {"epoch_[0-9][0-9][0-9]*.json", "epoch_[0-9][0-9][0-9]*.svg", "index.html"}},
};
#define N_PLACES ((int)(sizeof RUN_FILES / sizeof RUN_FILES[0]))
/* A study's trainings, each a run folder inside the study's. */
static const char STUDY_RUN[] = "train_*";

typedef struct names {
    char **v;
    int n, cap;
} names;

static void names_add(names *l, const char *a, const char *b)
{
    if (l->n == l->cap) l->v = tt_xrealloc(l->v, (size_t)(l->cap = l->cap ? 2 * l->cap : 16) *
                                                     sizeof *l->v);
    l->v[l->n] = tt_xmalloc(strlen(a) + strlen(b) + 1);
    strcat(strcpy(l->v[l->n++], a), b);
}

static void names_free(names *l)
{
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    *l = (names){0};
}

/* A run's files in one folder, relative to it (sorted), and the folders a run made there,
 * each listed after everything inside it (so rmdir in this order empties them). */
typedef struct found {
    names files, dirs;
} found;

/* Where the suffix ".tmp.X..." (letters and digits) of a temporary file begins in name, or
 * NULL. */
static const char *tmp_suffix(const char *name)
{
    static const char ALNUM[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const char *last = NULL;
    for (const char *t = strstr(name, ".tmp."); t; t = strstr(t + 1, ".tmp.")) last = t;
    return last && last[5] && strspn(last + 5, ALNUM) == strlen(last + 5) ? last : NULL;
}

static bool run_name(int place, const char *name)
{
    char base[512];
    snprintf(base, sizeof base, "%s", name);
    const char *tmp = tmp_suffix(base);
    if (tmp) base[tmp - base] = '\0';
    const int most = (int)(sizeof RUN_FILES[0].names / sizeof RUN_FILES[0].names[0]);
    for (int k = 0; k < most && RUN_FILES[place].names[k]; k++)
        if (fnmatch(RUN_FILES[place].names[k], base, 0) == 0) return true;
    return false;
}

/* Adds the run files under root/rel (rel "" or "train_x/") to f. */
static void scan(const char *root, const char *rel, found *f)
{
    char dir[PATH_LEN], path[PATH_LEN + 512], name[PATH_LEN];
    for (int i = 0; i < N_PLACES; i++) {
        const char *sub = RUN_FILES[i].sub;
        snprintf(dir, sizeof dir, "%s/%s%s", root, rel, sub);
        DIR *d = opendir(dir);
        if (!d) continue;
        int before = f->files.n;
        for (struct dirent *e; (e = readdir(d));) {
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (lstat(path, &st) != 0 || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            if (S_ISREG(st.st_mode) && run_name(i, e->d_name)) {
                snprintf(name, sizeof name, "%s%s%s%s", rel, sub, *sub ? "/" : "", e->d_name);
                names_add(&f->files, name, "");
            } else if (S_ISDIR(st.st_mode) && i == 0 && !*rel &&
                       fnmatch(STUDY_RUN, e->d_name, 0) == 0) {
                int had = f->files.n;
                snprintf(name, sizeof name, "%s/", e->d_name);
                scan(root, name, f);
                if (f->files.n > had) names_add(&f->dirs, e->d_name, "");
            }
        }
        closedir(d);
        if (*sub && f->files.n > before) names_add(&f->dirs, rel, sub);
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The epoch NNN of a name "PREFIXepoch_NNN.EXT" (no temporary file), or -1. */
static int epoch_of(const char *name, const char *prefix, const char *ext)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) || strncmp(name + n, "epoch_", 6) || strstr(name, ".tmp."))
        return -1;
    char *end;
    long e = strtol(name + n + 6, &end, 10);
    return end > name + n + 6 && strcmp(end, ext) == 0 && e >= 0 && e < 1000000 ? (int)e : -1;
}

/* The part of name before its first '/' (0: none) */
static int folder_len(const char *name)
{
    const char *slash = strchr(name, '/');
    return slash ? (int)(slash - name) : 0;
}

/* "config.json, metrics.jsonl, checkpoints/ (2 files), attention/ (9 files)": the folder's own
 * files by name (6 at most), then each subfolder's count. */
static const char *summary(const names *l, char *buf, size_t len)
{
    size_t n = 0;
    int shown = 0, more = 0;
    buf[0] = '\0';
#define PUT(...) (n += (size_t)snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__))
    for (int i = 0; i < l->n; i++)
        if (!folder_len(l->v[i]) && shown++ < 6) PUT("%s%s", n ? ", " : "", l->v[i]);
        else if (!folder_len(l->v[i])) more++;
    if (more) PUT(" and %d more", more);
    for (int i = 0; i < l->n; i++) {
        int k = folder_len(l->v[i]), count = 0, first = i;
        for (int j = 0; k && j < l->n; j++) {
            bool same = folder_len(l->v[j]) == k && !strncmp(l->v[j], l->v[i], (size_t)k);
            if (same && j < i) first = j;
            count += same;
        }
        if (k && first == i)
            PUT("%s%.*s/ (%d file%s)", n ? ", " : "", k, l->v[i], count, count > 1 ? "s" : "");
    }
#undef PUT
    return buf;
}

static int refuse(const tt_run *r, const found *f, char *err, size_t errlen)
{
    const char *dir = r->cfg.output.dir;
    const bool study = r->cfg.study.kind != TT_STUDY_NONE;
    char what[1024], resume[PATH_LEN + 128] = "", other[PATH_LEN];
    int latest = -1;
    for (int i = 0; i < f->files.n; i++) {
        int e = epoch_of(f->files.v[i], "checkpoints/", ".safetensors");
        latest = e > latest ? e : latest;
    }
    if (!study && latest >= 0)
        snprintf(resume, sizeof resume, "--resume %s/checkpoints/epoch_%03d.safetensors "
                 "continues that run (add --set train.epochs=N to train it longer); ", dir,
                 latest);
    struct stat st;
    for (int k = 2; k < 1000; k++) { /* a folder name that is free, for the hint */
        snprintf(other, sizeof other, "%s_%d", dir, k);
        if (stat(other, &st) != 0) break;
    }
    return tt_errorf(err, errlen, "%s: holds the files of an earlier %s (%s); a new %s there "
                     "would mix with them, so nothing was written\nHINT: %s--overwrite removes "
                     "those files, then starts anew%s; --set output.dir=%s writes elsewhere", dir,
                     study ? "run or study" : "run", summary(&f->files, what, sizeof what),
                     study ? "study" : "run", resume,
                     study || latest >= 0 ? "" : " (that run wrote no checkpoint to resume from)",
                     other);
}

/* --overwrite: the run's files, then the folders it made that are left empty. */
static int remove_run(const char *dir, const found *f, char *err, size_t errlen)
{
    char path[PATH_LEN + 512];
    for (int i = 0; i < f->files.n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, f->files.v[i]);
        if (unlink(path) != 0 && errno != ENOENT)
            return tt_errorf(err, errlen, "%s: cannot remove: %s", path, strerror(errno));
    }
    for (int i = 0; i < f->dirs.n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, f->dirs.v[i]);
        rmdir(path); /* a folder that still holds the user's files stays */
    }
    printf("--overwrite: removed the %d files of the earlier run in %s\n", f->files.n, dir);
    return 0;
}

/* text[0..n) as the file path: a temporary file renamed over it. */
static int write_atomic(const char *path, const char *text, size_t n, char *err, size_t errlen)
{
    tt_atomic_file o;
    if (tt_atomic_open(&o, path, err, errlen)) return -1;
    bool ok = fwrite(text, 1, n, o.f) == n;
    if (!ok) tt_errorf(err, errlen, "%s: cannot write %s", path, o.tmp);
    return tt_atomic_close(&o, ok, err, errlen);
}

/* Keeps the lines of metrics.jsonl up to optimizer step `step`, complete lines only (a line
 * that a crash cut short goes too); rewritten atomically when a line goes. The number of lines
 * dropped, or -1 with err. */
static int cut_metrics(const char *path, int64_t step, char *err, size_t errlen)
{
    if (access(path, F_OK) != 0) return 0;
    char *text = tt_render_slurp(path, err, errlen);
    if (!text) return -1;
    size_t kept = 0;
    int dropped = 0;
    for (char *line = text, *nl; *line; line = nl ? nl + 1 : line + strlen(line)) {
        nl = strchr(line, '\n');
        const char *s = strstr(line, "\"step\": ");
        bool keep = nl && (!s || s > nl || strtoll(s + 8, NULL, 10) <= step);
        size_t n = nl ? (size_t)(nl + 1 - line) : strlen(line);
        if (keep) memmove(text + kept, line, n), kept += n;
        else dropped++;
    }
    int rc = dropped ? write_atomic(path, text, kept, err, errlen) : 0;
    free(text);
    return rc ? -1 : dropped;
}

/* --resume into a folder with a history: what it holds after the checkpoint (r->step, r->epoch)
 * goes, so that its files read as one run: metrics lines, attention epochs (index.html
 * rebuilt), later checkpoints (but the one resumed from), and loss.svg (redrawn after the next
 * epoch). */
static int rewind_run(const tt_run *r, const char *resume, const found *f, char *err,
                      size_t errlen)
{
    const char *dir = r->cfg.output.dir;
    char path[PATH_LEN + 512];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    int lines = cut_metrics(path, r->step, err, errlen), maps = 0, ckpts = 0, maps_left = 0;
    if (lines < 0) return -1;
    struct stat from, st;
    bool have_from = stat(resume, &from) == 0;
    for (int i = 0; i < f->files.n; i++) {
        const char *name = f->files.v[i];
        int a = epoch_of(name, "attention/", ".json"), b = epoch_of(name, "attention/", ".svg");
        int c = epoch_of(name, "checkpoints/", ".safetensors");
        snprintf(path, sizeof path, "%s/%s", dir, name);
        maps_left += a >= 0 && a <= r->epoch;
        bool same = have_from && stat(path, &st) == 0 && st.st_ino == from.st_ino &&
                    st.st_dev == from.st_dev;
        bool go = a > r->epoch || b > r->epoch || (c > r->epoch && !same) ||
                  (lines && !strcmp(name, "loss.svg"));
        if (go && unlink(path) != 0 && errno != ENOENT)
            return tt_errorf(err, errlen, "%s: cannot remove: %s", path, strerror(errno));
        maps += go && a >= 0;
        ckpts += go && c >= 0;
    }
    snprintf(path, sizeof path, "%s/attention", dir);
    if (maps && maps_left && tt_render_index_html(path, err, errlen)) return -1;
    snprintf(path, sizeof path, "%s/attention/index.html", dir);
    if (maps && !maps_left) unlink(path);
    if (lines || maps || ckpts)
        printf("resuming in %s at epoch %d: dropped what came after it, %d lines of "
               "metrics.jsonl, %d attention epochs and %d checkpoints\n", dir, r->epoch, lines,
               maps, ckpts);
    return 0;
}

/* Removes the temporary files among f's (a killed writer's: the caller holds the lock) and
 * drops them from the list. */
static int remove_stale(const char *dir, found *f, char *err, size_t errlen)
{
    char path[PATH_LEN + 512];
    int kept = 0, gone = 0;
    for (int i = 0; i < f->files.n; i++) {
        char *name = f->files.v[i];
        if (!tmp_suffix(name)) {
            f->files.v[kept++] = name;
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", dir, name);
        free(name);
        if (unlink(path) != 0 && errno != ENOENT)
            return tt_errorf(err, errlen, "%s: cannot remove: %s", path, strerror(errno));
        gone++;
    }
    f->files.n = kept;
    if (gone) printf("removed %d temporary file%s that a stopped run left in %s\n", gone,
                     gone > 1 ? "s" : "", dir);
    return 0;
}

/* The files of f that are no temporary files. */
static int results(const found *f)
{
    int n = 0;
    for (int i = 0; i < f->files.n; i++) n += !tmp_suffix(f->files.v[i]);
    return n;
}

int tt_run_folder_claim(tt_run *r, const char *resume, bool overwrite, char *err, size_t errlen)
{
    const char *dir = r->cfg.output.dir;
    found f = {0};
    scan(dir, "", &f);
    if (f.files.n) qsort(f.files.v, (size_t)f.files.n, sizeof *f.files.v, by_name);
    /* a refusal changes nothing; else what killed writers left goes first */
    int rc = !results(&f) || resume || overwrite ? remove_stale(dir, &f, err, errlen)
                                                 : refuse(r, &f, err, errlen);
    if (!rc && f.files.n)
        rc = resume ? rewind_run(r, resume, &f, err, errlen) : remove_run(dir, &f, err, errlen);
    names_free(&f.files);
    names_free(&f.dirs);
    return rc;
}

int tt_run_folder_lock(const char *dir, int *fd, char *err, size_t errlen)
{
    *fd = -1;
    if (tt_make_dirs(dir, err, errlen)) return -1;
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) return tt_errorf(err, errlen, "%s: cannot open the folder: %s", dir,
                                strerror(errno));
    if (flock(d, LOCK_EX | LOCK_NB) == 0) {
        *fd = d;
        return 0;
    }
    int e = errno;
    close(d);
    if (e == EWOULDBLOCK)
        return tt_errorf(err, errlen, "%s: another ./train is using this folder (it holds the "
                         "folder's lock); nothing was changed\nHINT: wait for it to end, or "
                         "--set output.dir=ANOTHER_FOLDER", dir);
    return tt_errorf(err, errlen, "%s: cannot lock the folder: %s", dir, strerror(e));
}

int tt_make_dirs(const char *path, char *err, size_t errlen)
{
    char buf[PATH_LEN];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        bool end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return tt_errorf(err, errlen, "%s: cannot create the directory: %s", buf,
                                 strerror(errno));
            struct stat st;
            if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
                return tt_errorf(err, errlen, "%s: exists and is not a directory", buf);
            if (end) return 0;
            *p = '/';
        }
    }
}

int tt_run_write_config(const tt_run *r, char *err, size_t errlen)
{
    char path[PATH_LEN];
    if (tt_make_dirs(r->cfg.output.dir, err, errlen)) return -1;
    snprintf(path, sizeof path, "%s/config.json", r->cfg.output.dir);
    char *json = tt_config_to_json(&r->cfg);
    size_t n = strlen(json);
    json = tt_xrealloc(json, n + 2);
    strcpy(json + n, "\n");
    int rc = write_atomic(path, json, n + 1, err, errlen);
    free(json);
    return rc;
}

int tt_run_prepare_dir(tt_run *r, bool append, char *err, size_t errlen)
{
    char path[PATH_LEN];
    if (tt_run_write_config(r, err, errlen)) return -1;
    snprintf(path, sizeof path, "%s/metrics.jsonl", r->cfg.output.dir);
    if (!(r->metrics = fopen(path, append ? "a" : "w")))
        return tt_errorf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}
