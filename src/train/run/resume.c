/* resume.c: whether --resume CHECKPOINT may write into output.dir. A folder belongs to the
 * run its run.json names; a checkpoint names the run that wrote it (its __metadata__ "run").
 * Only that run's own folder is continued (and cut back to the checkpoint, folder.c), and only
 * when its metrics.jsonl still holds the checkpoint's step; a new or empty folder takes the
 * resumed run under a new id (run.json's resumed_from names the checkpoint), and the same
 * resume into that folder again starts it over from there. A folder of an
 * older version (files of a run, no run.json) is continued only from one of its own
 * checkpoints, the very file. Everything is checked before anything in the folder changes.
 * The cut itself (folder.c) shortens metrics.jsonl here (tt_run_cut_metrics). */
#include "train/run/run.h"

#include "train/report/render.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATH_LEN (2 * TT_CONFIG_PATH + 64)

/* metrics.jsonl at path holds the evaluation line of optimizer step `from` or, when `to` is
 * past it, any line of a step in [from, to] */
static bool has_history(const char *path, int64_t from, int64_t to)
{
    char *text = tt_render_slurp(path, NULL, 0);
    bool found = false;
    for (char *line = text, *nl; line && *line && !found; line = nl ? nl + 1 : "") {
        nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        const char *s = strstr(line, "\"step\": ");
        long long k = s ? strtoll(s + 8, NULL, 10) : -1;
        found = nl && s && k >= from && k <= to && (k > from || strstr(line, "\"valid_loss\""));
    }
    free(text);
    return found;
}

/* a and b name the same file (device and inode); false when either is not there */
static bool same_inode(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static const char *the_run(const char *id)
{
    return *id ? id : "none named (a checkpoint of an older version)";
}

int tt_run_resume_check(const tt_run *r, const char *resume, const tt_run_record *rec,
                        bool found, bool has_files, bool same_file, char *err, size_t errlen)
{
    const char *dir = r->cfg.output.dir, *ckpt_run = r->resumed_run;
    char path[PATH_LEN];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    /* the folder must hold the evaluation line of the checkpoint's epoch; for a mid-epoch
     * checkpoint that of the epoch before, or a line of the steps since (a folder that a
     * resume began holds no evaluation before its first epoch) */
    const int64_t eval_step = (int64_t)r->epoch * r->steps_per_epoch;
    /* the checkpoint's own folder, when its path shows it (DIR/checkpoints/NAME) */
    char own[PATH_LEN] = "";
    const char *at = strstr(resume, "/checkpoints/");
    if (at && !strchr(at + 13, '/'))
        snprintf(own, sizeof own, "--set output.dir=%.*s resumes in the checkpoint's own "
                 "folder, ", (int)(at - resume), resume);
    char how[3 * PATH_LEN];
    snprintf(how, sizeof how, "HINT: %s--set output.dir=NEW_FOLDER in a new one (the "
             "checkpoint's run goes on there); if %s's run is to be discarded, ./train CONFIG "
             "--overwrite starts a new run in it (--overwrite with --resume is refused), or "
             "remove the folder first", own, dir);
    if (found && !strcmp(rec->id, ckpt_run)) {
        if (has_history(path, eval_step, r->step)) return 0;
        return tt_errorf(err, errlen, "%s: this folder is run %s's (started %s), the run of %s, "
                         "but its metrics.jsonl holds no evaluation of step %lld, where that "
                         "checkpoint stands (its history was cut back before, or the file was "
                         "changed); resuming here would leave a history with a gap, so nothing "
                         "was changed\n%s", dir, rec->id, rec->started, resume,
                         (long long)eval_step, how);
    }
    /* the same resume again (the folder's run began at this very checkpoint, and stopped
     * before its first checkpoint, say): its whole history lies past the checkpoint and is
     * the folder's own, so it is cut back like any of the run's */
    if (found && *ckpt_run && !strcmp(rec->from_id, ckpt_run) &&
        same_inode(rec->from_path, resume))
        return 0;
    if (found)
        return tt_errorf(err, errlen, "%s: this folder belongs to run %s (started %s); %s is a "
                         "checkpoint of another run (%s); resuming here would remove that run's "
                         "later files and mix the two runs, so nothing was changed\n%s", dir,
                         rec->id, rec->started, resume, the_run(ckpt_run), how);
    if (!has_files || same_file) return 0;
    return tt_errorf(err, errlen, "%s: holds the files of a run with no run.json (written by an "
                     "older version, its run unknown), and %s is not one of its checkpoints/; "
                     "resuming here could mix two runs, so nothing was changed\n%s", dir, resume,
                     how);
}

/* A line that a crash cut short goes too. */
int tt_run_cut_metrics(const char *path, int64_t step, char *err, size_t errlen)
{
    struct stat st; /* not a file (a link to /dev/null, say): nothing to cut */
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
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
    int rc = 0;
    if (dropped) {
        tt_atomic_file o;
        rc = tt_atomic_open(&o, path, err, errlen);
        if (!rc) rc = tt_atomic_close(&o, fwrite(text, 1, kept, o.f) == kept, err, errlen);
    }
    free(text);
    return rc ? -1 : dropped;
}
