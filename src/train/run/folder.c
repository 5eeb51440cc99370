/* folder.c: a run's folder (output.dir). Its run.json (record.c) lists the files its run
 * wrote; --overwrite removes those (and the folders they leave empty), never another: a file
 * of the user's stays, even one named like a run's. A folder of an older version, with no
 * run.json, is read by name: RUN_FILES gives, once, the exact names a run writes there
 * (config.json, metrics.jsonl, loss.svg, checkpoints/epoch_NNN.safetensors and
 * step_NNNNNNNN.safetensors, attention/epoch_NNN.json|svg and attention/index.html; a study's
 * report.md, worked_examples.md, CSV and SVG files, and its trainings' folders train_<variant>/,
 * a run folder each). A temporary file of an atomic write (NAME.tmp.XXXXXX, mkstemp's six
 * letters and digits, or NAME.tmp.PID of older versions) that a killed process left is
 * removed when the next run claims the folder: under the folder's lock (tt_run_folder_lock),
 * no live writer owns one. Removal goes by unlinkat on the name, inside folders opened without
 * following links, and a folder whose checkpoints/, attention/ or metrics.jsonl is a link is
 * refused before anything changes. */
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

/* Where a run writes, relative to its folder, and the names it gives its files there: exact
 * names, or "%" forms (a number as the run prints it: epoch_%03d, step_%08lld); the study's
 * CSV and SVG files at the top (fnmatch patterns). */
static const struct {
    const char *sub;
    const char *names[7];
} RUN_FILES[] = {
    {"", {"config.json", "metrics.jsonl", "report.md", "worked_examples.md", "*.csv", "*.svg"}},
    {"checkpoints", {"epoch_%03d.safetensors", "step_%08lld.safetensors"}},
    {"attention", {"epoch_%03d.json", "epoch_%03d.svg", "index.html"}},
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

/* Where the suffix of a temporary file begins in name, or NULL: ".tmp.XXXXXX" (six letters
 * and digits, as mkstemp makes them) or ".tmp.PID" (digits, older versions' names). */
static const char *tmp_suffix(const char *name)
{
    static const char ALNUM[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const char *last = NULL;
    for (const char *t = strstr(name, ".tmp."); t; t = strstr(t + 1, ".tmp.")) last = t;
    if (!last || !last[5]) return NULL;
    size_t n = strlen(last + 5);
    bool made = n == 6 && strspn(last + 5, ALNUM) == 6, pid = strspn(last + 5, "0123456789") == n;
    return made || pid ? last : NULL;
}

/* name is what form prints ("%03d", "%08lld" forms: a number as the run writes it; else a
 * pattern) */
static bool name_of(const char *form, const char *name)
{
    const char *pct = strchr(form, '%');
    if (!pct || pct[1] == '\0') return fnmatch(form, name, 0) == 0;
    size_t pre = (size_t)(pct - form);
    if (strncmp(name, form, pre) || name[pre] < '0' || name[pre] > '9') return false;
    char again[512];
    long long k = strtoll(name + pre, NULL, 10);
    if (k < 0 || k > 999999999999999LL || (!strstr(form, "lld") && k > 999999)) return false;
    if (strstr(form, "lld")) snprintf(again, sizeof again, form, k);
    else snprintf(again, sizeof again, form, (int)k);
    return strcmp(again, name) == 0;
}

static bool run_name(int place, const char *name)
{
    char base[512];
    snprintf(base, sizeof base, "%s", name);
    const char *tmp = tmp_suffix(base);
    if (tmp) base[tmp - base] = '\0';
    const int most = (int)(sizeof RUN_FILES[0].names / sizeof RUN_FILES[0].names[0]);
    for (int k = 0; k < most && RUN_FILES[place].names[k]; k++)
        if (name_of(RUN_FILES[place].names[k], base)) return true;
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

/* The step NNNNNNNN of "checkpoints/step_NNNNNNNN.safetensors" (no temporary file), or -1. */
static int64_t step_of(const char *name)
{
    const char prefix[] = "checkpoints/step_";
    if (strncmp(name, prefix, sizeof prefix - 1) || strstr(name, ".tmp.")) return -1;
    char *end;
    long long k = strtoll(name + sizeof prefix - 1, &end, 10);
    return end > name + sizeof prefix - 1 && strcmp(end, ".safetensors") == 0 && k > 0 ? k : -1;
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
    /* the latest checkpoint by step: an epoch's ends step epoch * steps_per_epoch */
    int64_t latest = -1;
    const char *name = NULL;
    for (int i = 0; i < f->files.n; i++) {
        int e = epoch_of(f->files.v[i], "checkpoints/", ".safetensors");
        int64_t k = e >= 0 ? (int64_t)e * r->steps_per_epoch : step_of(f->files.v[i]);
        if (k >= 0 && k >= latest) latest = k, name = f->files.v[i];
    }
    if (!study && name)
        snprintf(resume, sizeof resume, "--resume %s/%s continues that run (add --set "
                 "train.epochs=N to train it longer); ", dir, name);
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

/* The folder of dir/rel's last component, opened without following a link on the way (dir
 * itself may be one: output.dir is the user's choice); *last points to that component. -1 when
 * a folder on the way is missing or a link. */
static int open_parent(const char *dir, const char *rel, const char **last)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char part[PATH_LEN];
    for (const char *s = rel, *slash; fd >= 0 && (slash = strchr(s, '/')); s = slash + 1) {
        snprintf(part, sizeof part, "%.*s", (int)(slash - s), s);
        int sub = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = sub;
    }
    const char *slash = strrchr(rel, '/');
    *last = slash ? slash + 1 : rel;
    return fd;
}

/* dir/rel removed if it is a plain file (a link is the user's, never followed): 1 removed,
 * 0 not there or not a file, -1 with err. */
static int remove_file(const char *dir, const char *rel, char *err, size_t errlen)
{
    const char *last;
    int fd = open_parent(dir, rel, &last), rc = 0;
    struct stat st;
    if (fd >= 0 && fstatat(fd, last, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
        rc = 1;
        if (unlinkat(fd, last, 0) != 0 && errno != ENOENT)
            rc = tt_errorf(err, errlen, "%s/%s: cannot remove: %s", dir, rel, strerror(errno));
    }
    if (fd >= 0) close(fd);
    return rc;
}

/* What the folder dir/rel holds besides run.json (files, links; folders looked into, three
 * deep, never through a link): up to `most` names into buf at *n; the count. */
static int leftovers(const char *dir, const char *rel, char *buf, size_t len, size_t *n,
                     int most)
{
    char path[2 * PATH_LEN + 1024], sub[PATH_LEN + 512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    DIR *d = opendir(path);
    int count = 0, depth = 0;
    for (const char *c = rel; *c; c++) depth += *c == '/';
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            (!*rel && !strcmp(e->d_name, "run.json")))
            continue;
        if ((size_t)snprintf(sub, sizeof sub - 1, "%s%s", rel, e->d_name) >= sizeof sub - 1)
            continue;
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, sub);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && depth < 3) {
            strcat(sub, "/");
            count += leftovers(dir, sub, buf, len, n, most - count);
        } else if (count++ < most) {
            *n += (size_t)snprintf(buf + *n, *n < len ? len - *n : 0, "%s%s", *n ? ", " : "",
                                   sub);
        }
    }
    if (d) closedir(d);
    return count;
}

/* --overwrite: the run's files, then the folders it made that are left empty; says which
 * files stay (the user's). */
static int remove_run(const char *dir, const found *f, char *err, size_t errlen)
{
    int gone = 0;
    for (int i = 0; i < f->files.n; i++) {
        int rc = remove_file(dir, f->files.v[i], err, errlen);
        if (rc < 0) return -1;
        gone += rc;
    }
    for (int i = 0; i < f->dirs.n; i++) {
        const char *last;
        int fd = open_parent(dir, f->dirs.v[i], &last);
        if (fd >= 0) unlinkat(fd, last, AT_REMOVEDIR); /* one that holds the user's files stays */
        if (fd >= 0) close(fd);
    }
    char kept[1024] = "";
    size_t len = 0;
    int n_kept = leftovers(dir, "", kept, sizeof kept, &len, 8);
    printf("--overwrite: removed the %d files of the earlier run in %s", gone, dir);
    if (n_kept) printf("; kept %d file%s the run did not write: %s%s", n_kept,
                       n_kept > 1 ? "s" : "", kept, n_kept > 8 ? " and more" : "");
    printf("\n");
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

/* --resume into a folder with a history: what it holds after the checkpoint (r->step, r->epoch)
 * goes, so that its files read as one run: metrics lines, attention epochs (index.html
 * rebuilt), later checkpoints (but the one resumed from), and loss.svg (redrawn after the next
 * epoch). */
static int rewind_run(const tt_run *r, const char *resume, const found *f, tt_run_record *rec,
                      bool *redraw, char *err, size_t errlen)
{
    const char *dir = r->cfg.output.dir;
    char path[PATH_LEN + 512];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    int lines = tt_run_cut_metrics(path, r->step, err, errlen), maps = 0, ckpts = 0, maps_left = 0;
    if (lines < 0) return -1;
    struct stat from, st;
    bool have_from = stat(resume, &from) == 0;
    for (int i = 0; i < f->files.n; i++) {
        const char *name = f->files.v[i];
        int a = epoch_of(name, "attention/", ".json"), b = epoch_of(name, "attention/", ".svg");
        int c = epoch_of(name, "checkpoints/", ".safetensors");
        int64_t k = step_of(name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        maps_left += a >= 0 && a <= r->epoch;
        bool same = have_from && stat(path, &st) == 0 && st.st_ino == from.st_ino &&
                    st.st_dev == from.st_dev;
        bool go = a > r->epoch || b > r->epoch || (c > r->epoch && !same) ||
                  (k > r->step && !same) || (lines && !strcmp(name, "loss.svg"));
        if (go && remove_file(dir, name, err, errlen) < 0) return -1;
        if (go) tt_record_unlist(rec, name);
        maps += go && a >= 0;
        ckpts += go && (c >= 0 || k >= 0);
    }
    *redraw = maps && maps_left; /* index.html, once the record is the run's */
    if (maps && !maps_left && remove_file(dir, "attention/index.html", err, errlen) < 0)
        return -1;
    if (maps && !maps_left) tt_record_unlist(rec, "attention/index.html");
    if (lines || maps || ckpts)
        printf("resuming in %s at step %lld (epoch %d): dropped what came after it, %d lines "
               "of metrics.jsonl, %d attention epochs and %d checkpoints\n", dir,
               (long long)r->step, r->epoch, lines, maps, ckpts);
    return 0;
}

/* Removes the temporary files among f's (a killed writer's: the caller holds the lock) and
 * drops them from the list. */
static int remove_stale(const char *dir, found *f, char *err, size_t errlen)
{
    int kept = 0, gone = 0;
    for (int i = 0; i < f->files.n; i++) {
        char *name = f->files.v[i];
        if (!tmp_suffix(name)) {
            f->files.v[kept++] = name;
            continue;
        }
        int rc = remove_file(dir, name, err, errlen);
        free(name);
        if (rc < 0) return -1;
        gone += rc;
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

static bool is_file(const char *dir, const char *rel)
{
    const char *last;
    int fd = open_parent(dir, rel, &last);
    struct stat st;
    bool yes = fd >= 0 && fstatat(fd, last, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    if (fd >= 0) close(fd);
    return yes;
}

static int longer_first(const void *a, const void *b)
{
    size_t x = strlen(*(char *const *)a), y = strlen(*(char *const *)b);
    return (x < y) - (x > y);
}

/* f from the record: the files it lists that are there, the temporary files of killed writers
 * (by name), and the folders of the listed files, each after those inside it. */
static void listed(const char *dir, const tt_run_record *rec, found *f)
{
    found named = {0};
    scan(dir, "", &named);
    for (int i = 0; i < named.files.n; i++)
        if (tmp_suffix(named.files.v[i])) names_add(&f->files, named.files.v[i], "");
    names_free(&named.files);
    names_free(&named.dirs);
    for (int i = 0; i < rec->n; i++) {
        if (!is_file(dir, rec->files[i])) continue;
        names_add(&f->files, rec->files[i], "");
        char sub[PATH_LEN];
        snprintf(sub, sizeof sub, "%s", rec->files[i]);
        for (char *slash; (slash = strrchr(sub, '/'));) {
            *slash = '\0';
            bool have = false;
            for (int k = 0; k < f->dirs.n && !have; k++) have = !strcmp(f->dirs.v[k], sub);
            if (!have) names_add(&f->dirs, sub, "");
        }
    }
    if (f->dirs.n) qsort(f->dirs.v, (size_t)f->dirs.n, sizeof *f->dirs.v, longer_first);
}

/* A link where the run writes or removes (checkpoints/, attention/, metrics.jsonl) is
 * refused: files there would be written or removed in a folder that is not the run's. */
static int refuse_links(const char *dir, char *err, size_t errlen)
{
    static const char *const places[] = {"checkpoints", "attention", "metrics.jsonl"};
    for (int i = 0; i < 3; i++) {
        char path[PATH_LEN + 16];
        snprintf(path, sizeof path, "%s/%s", dir, places[i]);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            return tt_errorf(err, errlen, "%s: is a symbolic link; a run writes and removes its "
                             "files only in its own folder, never through a link, so nothing "
                             "was changed\nHINT: replace the link by a %s of its own, or --set "
                             "output.dir=ANOTHER_FOLDER", path, i < 2 ? "folder" : "file");
    }
    return 0;
}

/* checkpoint is the very file (device and inode) of one of f's checkpoints/ */
static bool own_checkpoint(const char *dir, const found *f, const char *checkpoint)
{
    struct stat from, st;
    char path[PATH_LEN + 512];
    if (stat(checkpoint, &from) != 0) return false;
    for (int i = 0; i < f->files.n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, f->files.v[i]);
        if (!strncmp(f->files.v[i], "checkpoints/", 12) && lstat(path, &st) == 0 &&
            st.st_ino == from.st_ino && st.st_dev == from.st_dev)
            return true;
    }
    return false;
}

int tt_run_folder_claim(tt_run *r, const char *resume, bool overwrite, char *err, size_t errlen)
{
    const char *dir = r->cfg.output.dir;
    found f = {0};
    tt_run_record old = {0}, rec = {0};
    bool has_record = false, redraw = false;
    if (refuse_links(dir, err, errlen) || tt_record_read(&old, dir, &has_record, err, errlen))
        return -1;
    if (has_record) listed(dir, &old, &f);
    else scan(dir, "", &f);
    if (f.files.n) qsort(f.files.v, (size_t)f.files.n, sizeof *f.files.v, by_name);
    /* every check first: a refusal changes nothing; then what killed writers left goes */
    int rc = resume ? tt_run_resume_check(r, resume, &old, has_record, results(&f) > 0,
                                          own_checkpoint(dir, &f, resume), err, errlen)
             : results(&f) && !overwrite ? refuse(r, &f, err, errlen)
                                         : 0;
    if (!rc) rc = remove_stale(dir, &f, err, errlen);
    if (resume && has_record) { /* the folder's own run goes on */
        rec = old;
        old = (tt_run_record){0};
    } else {
        tt_record_new(&rec);
        if (resume) rec.from_path = tt_xstrdup(resume);
        if (resume) memcpy(rec.from_id, r->resumed_run, sizeof rec.from_id);
        /* a folder of an older version resumed: its files are the run's */
        for (int i = 0; resume && i < f.files.n; i++) tt_record_list(&rec, f.files.v[i]);
    }
    if (!rc && f.files.n)
        rc = resume ? rewind_run(r, resume, &f, &rec, &redraw, err, errlen)
                    : remove_run(dir, &f, err, errlen);
    if (!rc) rc = tt_record_begin(&rec, dir, err, errlen);
    char path[PATH_LEN + 16];
    snprintf(path, sizeof path, "%s/attention", dir);
    if (!rc && redraw) rc = tt_render_index_html_of(path, tt_record_active_lists, err, errlen);
    tt_record_free(&old);
    tt_record_free(&rec);
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
    /* never through a link: the file is the run's own */
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (append ? O_APPEND : O_TRUNC),
                  0666);
    if (fd < 0 || !(r->metrics = fdopen(fd, append ? "a" : "w"))) {
        int e = errno;
        if (fd >= 0) close(fd);
        return tt_errorf(err, errlen, "%s: cannot write: %s", path, strerror(e));
    }
    return tt_record_add(path, err, errlen);
}
