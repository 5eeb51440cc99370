/* record.c: run.json, the record that makes a run folder its run's: a random run id (128
 * bits, hex), the start time, the checkpoint a resumed run came from, and the list of the
 * files (relative paths) the run wrote there. While a run is the active one (from
 * tt_record_begin to tt_record_end), every file an atomic write (tt_atomic_close's hook) or
 * tt_record_add puts under its folder joins the list, and run.json is rewritten (temporary file
 * and rename) when the list grows. --overwrite removes only what the list names; --resume
 * compares the folder's id with the checkpoint's (its __metadata__ "run"). */
#define _DEFAULT_SOURCE
#include "train/run/run.h"

#include "train/report/render.h"
#include "train/run/blas_env.h"

#include <cblas.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static tt_run_record active;
static char active_dir[2 * TT_CONFIG_PATH];
static bool is_active;

void tt_record_free(tt_run_record *rec)
{
    for (int i = 0; i < rec->n; i++) free(rec->files[i]);
    free(rec->files);
    free(rec->from_path);
    *rec = (tt_run_record){0};
}

bool tt_record_lists(const tt_run_record *rec, const char *rel)
{
    for (int i = 0; i < rec->n; i++)
        if (!strcmp(rec->files[i], rel)) return true;
    return false;
}

void tt_record_list(tt_run_record *rec, const char *rel)
{
    if (tt_record_lists(rec, rel)) return;
    if (rec->n == rec->cap)
        rec->files = tt_xrealloc(rec->files, (size_t)(rec->cap = rec->cap ? 2 * rec->cap : 16) *
                                                 sizeof *rec->files);
    rec->files[rec->n++] = tt_xstrdup(rel);
}

void tt_record_unlist(tt_run_record *rec, const char *rel)
{
    for (int i = 0; i < rec->n; i++)
        if (!strcmp(rec->files[i], rel)) {
            free(rec->files[i]);
            rec->files[i] = rec->files[--rec->n];
            return;
        }
}

bool tt_record_id_valid(const char *id)
{
    return id && strlen(id) == TT_RUN_ID_LEN &&
           strspn(id, "0123456789abcdef") == TT_RUN_ID_LEN;
}

void tt_record_new(tt_run_record *rec)
{
    *rec = (tt_run_record){0};
    unsigned char bytes[TT_RUN_ID_LEN / 2];
    size_t got = 0;
    while (got < sizeof bytes) { /* getrandom blocks only until the pool is seeded once */
        ssize_t k = getrandom(bytes + got, sizeof bytes - got, 0);
        if (k < 0 && errno == EINTR) continue;
        TT_ASSERT_MSG(k > 0, "getrandom failed: %s", strerror(errno));
        got += (size_t)k;
    }
    for (size_t i = 0; i < sizeof bytes; i++) sprintf(rec->id + 2 * i, "%02x", bytes[i]);
    time_t now = time(NULL);
    struct tm tm;
    strftime(rec->started, sizeof rec->started, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
}

int tt_record_read(tt_run_record *rec, const char *dir, bool *found, char *err, size_t errlen)
{
    char path[2 * TT_CONFIG_PATH + 16];
    snprintf(path, sizeof path, "%s/run.json", dir);
    *rec = (tt_run_record){0};
    *found = false;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 0;
    if (fd >= 0) close(fd);
    if (fd < 0)
        return tt_errorf(err, errlen, "%s: cannot read the run's record: %s (it must be a "
                         "plain file, not a link); nothing was changed", path, strerror(errno));
    char *text = tt_render_slurp(path, err, errlen);
    if (!text) return -1;
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "run");
    const cJSON *started = cJSON_GetObjectItemCaseSensitive(root, "started");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
    bool ok = cJSON_IsString(id) && tt_record_id_valid(id->valuestring) &&
              cJSON_IsString(started) && strlen(started->valuestring) < sizeof rec->started &&
              cJSON_IsArray(files);
    for (const cJSON *f = ok ? files->child : NULL; f; f = f->next) {
        /* a relative path inside the folder: no "..", no leading '/' */
        ok = cJSON_IsString(f) && f->valuestring[0] && f->valuestring[0] != '/' &&
             !strstr(f->valuestring, "..") && strcmp(f->valuestring, "run.json");
        if (!ok) break;
        tt_record_list(rec, f->valuestring);
    }
    if (!ok) {
        cJSON_Delete(root);
        tt_record_free(rec);
        return tt_errorf(err, errlen, "%s: not a run record (it needs \"run\": 32 hex digits, "
                         "\"started\" and \"files\": relative paths); the folder's run is "
                         "unknown, so nothing was changed\nHINT: --set output.dir=ANOTHER_FOLDER, "
                         "or restore run.json", path);
    }
    strcpy(rec->id, id->valuestring);
    strcpy(rec->started, started->valuestring);
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(root, "resumed_from");
    const cJSON *from_id = cJSON_GetObjectItemCaseSensitive(from, "run");
    const cJSON *from_path = cJSON_GetObjectItemCaseSensitive(from, "checkpoint");
    if (cJSON_IsString(from_id) && tt_record_id_valid(from_id->valuestring))
        strcpy(rec->from_id, from_id->valuestring);
    if (cJSON_IsString(from_path)) rec->from_path = tt_xstrdup(from_path->valuestring);
    cJSON_Delete(root);
    *found = true;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* run.json written from rec (files sorted), the hook off meanwhile (run.json lists itself
 * never). */
static int write_record(tt_run_record *rec, const char *dir, char *err, size_t errlen)
{
    if (rec->n) qsort(rec->files, (size_t)rec->n, sizeof *rec->files, by_name); /* NULL at 0 */
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "run", rec->id);
    cJSON_AddStringToObject(root, "started", rec->started);
    if (rec->from_path) {
        cJSON *from = cJSON_AddObjectToObject(root, "resumed_from");
        if (rec->from_id[0]) cJSON_AddStringToObject(from, "run", rec->from_id);
        else cJSON_AddNullToObject(from, "run");
        cJSON_AddStringToObject(from, "checkpoint", rec->from_path);
    }
    /* the kernels this process runs, and OpenBLAS's own pick when the program chose others */
    cJSON_AddStringToObject(root, "blas_core", openblas_get_corename());
    if (tt_blas_env_picked())
        cJSON_AddStringToObject(root, "blas_core_openblas_picked", tt_blas_env_picked());
    cJSON *files = cJSON_AddArrayToObject(root, "files");
    for (int i = 0; i < rec->n; i++) cJSON_AddItemToArray(files, cJSON_CreateString(rec->files[i]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    TT_ASSERT_MSG(text, "out of memory printing run.json");
    char path[2 * TT_CONFIG_PATH + 16];
    snprintf(path, sizeof path, "%s/run.json", dir);
    tt_atomic_set_hook(NULL);
    tt_atomic_file o;
    int rc = tt_atomic_open(&o, path, err, errlen);
    if (!rc) rc = tt_atomic_close(&o, fprintf(o.f, "%s\n", text) > 0, err, errlen);
    if (is_active) tt_atomic_set_hook(tt_record_add);
    free(text);
    return rc;
}

int tt_record_add(const char *path, char *err, size_t errlen)
{
    size_t n = strlen(active_dir);
    if (!is_active || strncmp(path, active_dir, n) || path[n] != '/') return 0;
    const char *rel = path + n + 1;
    if (tt_record_lists(&active, rel) || !strcmp(rel, "run.json")) return 0;
    tt_record_list(&active, rel);
    return write_record(&active, active_dir, err, errlen);
}

int tt_record_begin(tt_run_record *rec, const char *dir, char *err, size_t errlen)
{
    tt_record_end();
    active = *rec;
    *rec = (tt_run_record){0};
    snprintf(active_dir, sizeof active_dir, "%s", dir);
    is_active = true;
    if (write_record(&active, active_dir, err, errlen)) {
        tt_record_end();
        return -1;
    }
    tt_atomic_set_hook(tt_record_add);
    return 0;
}

void tt_record_end(void)
{
    if (is_active) tt_atomic_set_hook(NULL);
    is_active = false;
    tt_record_free(&active);
    active_dir[0] = '\0';
}

const char *tt_record_id(void)
{
    return is_active ? active.id : NULL;
}

bool tt_record_active_lists(const char *dir, const char *name)
{
    char path[2 * TT_CONFIG_PATH + 512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t n = strlen(active_dir);
    return !is_active || (!strncmp(path, active_dir, n) && path[n] == '/' &&
                          tt_record_lists(&active, path + n + 1));
}
