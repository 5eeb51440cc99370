/* config.c: loading the run configuration (config.h, docs/design.md section 3). Reading, defaults,
 * validation and error messages walk the schema table tt_config_keys (config_json.c, which also
 * writes a config back), so a key added there is read and checked here. Loading goes: read the
 * file, parse it with cJSON, apply the --set overrides to the tree, check its shape (unknown,
 * duplicate keys), read each key, then the rules between keys and the data files. The first
 * problem found is the one message. */
#define _XOPEN_SOURCE 700 /* realpath */

#include "train/config/config_keys.h"
#include "train/data/tokenizer.h" /* tt_next_word: a probe must hold a word */

#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const SECTIONS[] = {"data", "model", "train", "output", "study"};
#define N_SECTIONS ((int)(sizeof SECTIONS / sizeof SECTIONS[0]))

typedef struct ctx {
    tt_config *c;
    const char *path; /* the config file, as given */
    char *err;
    size_t errlen;
    /* Per key k: the last --set that gave it its value, else NULL; its value in the tree, NULL
     * when absent (the default). */
    const char *origin[TT_CONFIG_N_KEYS];
    const cJSON *val[TT_CONFIG_N_KEYS];
    bool no_files; /* tt_config_from_text: the data files need not exist */
} ctx;

static bool is_section(const char *name)
{
    for (int i = 0; i < N_SECTIONS; i++)
        if (strcmp(SECTIONS[i], name) == 0) return true;
    return false;
}

/* The index of section.name in tt_config_keys (section NULL: a top-level key), or -1. */
static int find_key(const char *section, const char *name)
{
    for (int k = 0; k < TT_CONFIG_N_KEYS; k++) {
        const tt_config_key *kd = &tt_config_keys[k];
        bool same =
            section && kd->section ? strcmp(section, kd->section) == 0 : section == kd->section;
        if (same && strcmp(name, kd->name) == 0) return k;
    }
    return -1;
}

static int key_index(const char *section, const char *name)
{
    int k = find_key(section, name);
    TT_ASSERT_MSG(k >= 0, "config key %s.%s is not in tt_config_keys", section, name);
    return k;
}

/* "d_model, n_heads, ..."; for the top level (section NULL) its keys, then the sections. */
static const char *key_list(const char *section, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (int k = 0; k < TT_CONFIG_N_KEYS + N_SECTIONS; k++) {
        const char *name =
            k < TT_CONFIG_N_KEYS ? tt_config_keys[k].name : SECTIONS[k - TT_CONFIG_N_KEYS];
        if (k < TT_CONFIG_N_KEYS && find_key(section, name) != k) continue;
        if (k >= TT_CONFIG_N_KEYS && section) break;
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? ", " : "", name);
    }
    return buf;
}

static const char *key_path(int k, char *buf, size_t len)
{
    const tt_config_key *kd = &tt_config_keys[k];
    snprintf(buf, len, "%s%s%s", kd->section ? kd->section : "", kd->section ? "." : "", kd->name);
    return buf;
}

/* Where a value came from: the --set that gave key a (else key b, when b >= 0) its value, else
 * the file. */
static const char *source(const ctx *x, int a, int b, char *buf, size_t len)
{
    const char *set = a >= 0 && x->origin[a] ? x->origin[a] : b >= 0 ? x->origin[b] : NULL;
    if (!set) return x->path;
    snprintf(buf, len, "--set %s", set);
    return buf;
}

/* The one message: "SOURCE: JSON.PATH: what was found; what is allowed". */
static TT_PRINTF(4, 5) int fail(const ctx *x, const char *src, const char *jpath, const char *fmt,
                                ...)
{
    char msg[TT_CONFIG_ERR];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (jpath) return tt_errorf(x->err, x->errlen, "%s: %s: %s", src, jpath, msg);
    return tt_errorf(x->err, x->errlen, "%s: %s", src, msg);
}

/* What was found, for a message: 65, "mid", true, an array. With name_type (the key wants another
 * JSON type) a string or a number says so: the string "abc". */
static const char *describe(const cJSON *v, bool name_type, char *buf, size_t len)
{
    char num[32];
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsNumber(v)) {
        bool big = !isfinite(v->valuedouble);
        snprintf(buf, len, "%s%s", name_type || big ? "the number " : "",
                 big ? "too large for a double"
                     : tt_config_number_text(v->valuedouble, num, sizeof num));
        return buf;
    }
    char *s = cJSON_PrintUnformatted(v); /* quoted and escaped */
    TT_ASSERT(s);
    const char *kind = name_type && cJSON_IsString(v) ? "the string " : "";
    if (strlen(s) > 60)
        snprintf(buf, len, "%s%.56s...\"", kind, s);
    else
        snprintf(buf, len, "%s%s", kind, s);
    cJSON_free(s);
    return buf;
}

/* An array of strings: each non-empty, valid UTF-8; stored (malloc'ed) as soon as allocated so
 * that tt_config_free releases a half-read array. */
static int read_strings(ctx *x, int k, const cJSON *v, const char *src, const char *jpath)
{
    const tt_config_key *kd = &tt_config_keys[k];
    int n = cJSON_GetArraySize(v);
    char **a = n ? tt_xcalloc((size_t)n, sizeof *a) : NULL;
    *(char ***)tt_config_field(x->c, kd) = a;
    *(int *)((char *)x->c + kd->count_off) = n;
    char ipath[128], found[128];
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        snprintf(ipath, sizeof ipath, "%s[%d]", jpath, i);
        if (!cJSON_IsString(e) || !e->valuestring[0])
            return fail(x, src, ipath, "found %s; allowed: a non-empty string",
                        describe(e, !cJSON_IsString(e), found, sizeof found));
        size_t len = strlen(e->valuestring), ok = tt_utf8_valid_prefix(e->valuestring, len);
        if (ok < len)
            return fail(x, src, ipath,
                        "found a string that is not valid UTF-8 (byte %zu); "
                        "allowed: a non-empty UTF-8 string",
                        ok);
        const char *p = e->valuestring, *word;
        size_t wlen;
        if (kd->count_off == offsetof(tt_config, data.n_probes) &&
            !tt_next_word(&p, p + len, &word, &wlen))
            return fail(x, src, ipath,
                        "found %s, which holds no word; allowed: a sentence of at least one "
                        "word (words are separated by spaces and tabs)",
                        describe(e, false, found, sizeof found));
        a[i] = tt_xstrdup(e->valuestring);
    }
    return 0;
}

/* Why number d of key k (in its range as a double) is not valid as a float: the model computes
 * in float32 (float64 in the other build; checking the float in both keeps a config valid in
 * both). NULL when it is: its float lies in the range's float32 bounds too (a bound such as
 * 1e-20 is not a float: compared as floats, 1e-20 itself passes), and a key that must be > 0
 * (eps, a rate: divided by, or by what it scales) is a normal float (a denormal eps of 1e-40
 * overflows what is divided by it). */
static const char *float_problem(const tt_config_key *k, double d, char *buf, size_t len)
{
    const double f = (double)(float)d, lo = (double)(float)k->lo, hi = (double)(float)k->hi;
    char num[32];
    if (!isfinite(f)) return "which is too large for float32";
    if ((k->hi_open ? f >= hi : f > hi) || (k->lo_open ? f <= lo : f < lo)) {
        snprintf(buf, len, "which rounds to %s in float32",
                 tt_config_number_text(f, num, sizeof num));
        return buf;
    }
    if (k->lo_open && k->lo == 0 && f < (double)FLT_MIN)
        return "which is a denormal number in float32 (below 1.17549e-38: dividing by it "
               "overflows)";
    return NULL;
}

/* What a string key (a path) must not hold: ./train prints it on the terminal (output.dir, the
 * checkpoints under it in the resume line). */
#define NOT_SHOWN "a control character or a byte that is not UTF-8"

/* Reads key k from the tree into the config, or its default when absent. */
static int read_key(ctx *x, const cJSON *root, int k)
{
    const tt_config_key *kd = &tt_config_keys[k];
    const cJSON *sec = kd->section ? cJSON_GetObjectItemCaseSensitive(root, kd->section) : root;
    const cJSON *v = sec ? cJSON_GetObjectItemCaseSensitive(sec, kd->name) : NULL;
    void *p = tt_config_field(x->c, kd);
    char buf[TT_CONFIG_ERR], jpath[64], ok[256], found[128];
    const char *src = source(x, k, -1, buf, sizeof buf);
    key_path(k, jpath, sizeof jpath);
    tt_config_allowed(kd, ok, sizeof ok);
    size_t okn = strlen(ok);
    if (kd->why) snprintf(ok + okn, sizeof ok - okn, " (%s)", kd->why);
    x->val[k] = v;
    if (!v) {
        if (kd->flags & REQUIRED)
            return fail(x, src, jpath, "missing; required (%s%s)",
                        kd->type == T_ENUM ? "one of " : "", ok);
        if ((kd->flags & (DERIVED | OPTIONAL)) || kd->type == T_STRS) return 0;
        if (kd->type == T_STR || kd->type == T_PATH)
            snprintf(p, kd->size, "%s", kd->sdef);
        else
            tt_config_store(x->c, kd, kd->def);
        return 0;
    }
    bool number = kd->type == T_INT || kd->type == T_I64 || kd->type == T_NUM;
    bool string = kd->type == T_ENUM || kd->type == T_STR || kd->type == T_PATH;
    bool type_ok = number               ? cJSON_IsNumber(v)
                   : string             ? cJSON_IsString(v)
                   : kd->type == T_BOOL ? cJSON_IsBool(v)
                                        : cJSON_IsArray(v);
    double d = type_ok && number ? v->valuedouble : 0;
    bool in = !number ||
              (isfinite(d) && (kd->lo_open ? d > kd->lo : d >= kd->lo) &&
               (kd->hi_open ? d < kd->hi : d <= kd->hi) && (kd->type == T_NUM || d == floor(d)));
    int i = 0; /* T_ENUM: the index of the string in names, 5 or at a NULL when not there */
    while (type_ok && kd->type == T_ENUM && i < 5 && kd->names[i] &&
           strcmp(kd->names[i], v->valuestring) != 0)
        i++;
    if (!type_ok || !in || (kd->type == T_ENUM && (i == 5 || !kd->names[i])))
        return fail(x, src, jpath, "found %s; allowed: %s",
                    describe(v, !type_ok, found, sizeof found), ok);
    char why[96];
    const char *f32 = kd->type == T_NUM ? float_problem(kd, d, why, sizeof why) : NULL;
    if (f32)
        return fail(x, src, jpath, "found %s, %s; allowed: %s (as a float32)",
                    describe(v, false, found, sizeof found), f32, ok);
    if (kd->type == T_STRS) return read_strings(x, k, v, src, jpath);
    if (!string || kd->type == T_ENUM) {
        tt_config_store(x->c, kd, number ? d : kd->type == T_BOOL ? cJSON_IsTrue(v) : i);
        return 0;
    }
    size_t n = strlen(v->valuestring);
    if (n == 0) return fail(x, src, jpath, "found \"\"; allowed: %s", ok);
    if (n >= kd->size)
        return fail(x, src, jpath, "found a string of %zu bytes; allowed: %s of at most %zu bytes",
                    n, ok, kd->size - 1);
    size_t shown = tt_term_printable_prefix(v->valuestring, n); /* a path goes to the terminal */
    if (shown < n)
        return fail(x, src, jpath, "found %s, which holds %s (byte %zu); allowed: %s of printable "
                    "UTF-8 text", describe(v, false, found, sizeof found), NOT_SHOWN, shown + 1,
                    ok);
    memcpy(p, v->valuestring, n + 1);
    return 0;
}

/* "SRC: JPATH: unknown key; allowed keys in SECTION: a, b" (section NULL: the top level). */
static int unknown_key(const ctx *x, const char *src, const char *jpath, const char *section)
{
    char keys[512];
    return fail(x, src, jpath, "unknown key; allowed keys %s%s: %s",
                section ? "in " : "at the top level", section ? section : "",
                key_list(section, keys, sizeof keys));
}

/* The tree's shape: sections are objects, every key is known and appears once. */
static bool is_duplicate(const cJSON *parent, const cJSON *e)
{
    for (const cJSON *p = parent->child; p != e; p = p->next)
        if (strcmp(p->string, e->string) == 0) return true;
    return false;
}

static int check_shape(const ctx *x, const cJSON *root)
{
    char keys[512], found[128], jpath[256];
    for (const cJSON *e = root->child; e; e = e->next) {
        if (is_duplicate(root, e))
            return fail(x, x->path, e->string, "duplicate key; each key may appear once");
        if (!is_section(e->string)) {
            if (find_key(NULL, e->string) < 0) return unknown_key(x, x->path, e->string, NULL);
            continue;
        }
        if (!cJSON_IsObject(e))
            return fail(x, x->path, e->string, "found %s; allowed: an object with keys %s",
                        describe(e, true, found, sizeof found),
                        key_list(e->string, keys, sizeof keys));
        for (const cJSON *f = e->child; f; f = f->next) {
            snprintf(jpath, sizeof jpath, "%s.%s", e->string, f->string);
            if (is_duplicate(e, f))
                return fail(x, x->path, jpath, "duplicate key; each key may appear once");
            if (find_key(e->string, f->string) < 0)
                return unknown_key(x, x->path, jpath, e->string);
        }
    }
    return 0;
}

/* cJSON decodes the escape \u0000 into a NUL byte, where C strings end: refused, in a file or
 * a --set, before anything reads the shortened string. */
#define NUL_WHY                                                                                    \
    "(the NUL character, which would cut it short); allowed: keys and strings without NUL"

/* --set KEY=VALUE: KEY a dotted path to a known key, VALUE parsed as JSON, else a string;
 * null removes the key, so its default applies. */
static int apply_set(ctx *x, cJSON *root, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return tt_errorf(x->err, x->errlen, "--set %s: expected KEY=VALUE (e.g. model.d_model=128)",
                         arg);
    char name[256], keys[512];
    int klen = (int)(eq - arg);
    snprintf(name, sizeof name, "%.*s", klen, arg);
    char *dot = strchr(name, '.');
    const char *section = dot ? name : NULL, *leaf = dot ? dot + 1 : name;
    if (dot) *dot = 0;
    int k = find_key(section, leaf);
    if (k < 0 && !section && is_section(leaf))
        return tt_errorf(x->err, x->errlen, "--set %s: %s is a section; set one of its keys: %s",
                         arg, leaf, key_list(leaf, keys, sizeof keys));
    if (k < 0) {
        char src[TT_CONFIG_ERR], jpath[256];
        snprintf(src, sizeof src, "--set %s", arg);
        snprintf(jpath, sizeof jpath, "%.*s", klen, arg);
        return unknown_key(x, src, jpath, section && is_section(section) ? section : NULL);
    }
    cJSON *parent = root;
    if (section) {
        parent = cJSON_GetObjectItemCaseSensitive(root, section);
        if (!parent) parent = cJSON_AddObjectToObject(root, section);
        if (!cJSON_IsObject(parent)) return 0; /* the file's mistake: check_shape reports it */
    }
    cJSON *v = cJSON_ParseWithOpts(eq + 1, NULL, 1);
    char at[128];
    bool key;
    if (v && tt_json_nul_path(eq + 1, v, at, sizeof at, &key)) {
        cJSON_Delete(v);
        char src[TT_CONFIG_ERR], jpath[sizeof name + sizeof at + 1];
        snprintf(src, sizeof src, "--set %s", arg);
        snprintf(jpath, sizeof jpath, "%.*s%s%s", klen, arg, at[0] && at[0] != '[' ? "." : "",
                 at);
        return fail(x, src, jpath, "found a %s holding \\u0000 %s", key ? "key" : "string",
                    NUL_WHY);
    }
    if (!v) v = cJSON_CreateString(eq + 1);
    TT_ASSERT(v);
    cJSON_DeleteItemFromObjectCaseSensitive(parent, leaf);
    if (cJSON_IsNull(v)) /* KEY=null: as if the file did not give the key */
        cJSON_Delete(v);
    else
        cJSON_AddItemToObject(parent, leaf, v);
    x->origin[k] = arg;
    return 0;
}

/* Resolves data path key k against the config's folder: an existing readable regular file,
 * stored as an absolute path. */
static int resolve_file(ctx *x, int k)
{
    char *p = tt_config_field(x->c, &tt_config_keys[k]);
    char joined[2 * TT_CONFIG_PATH + 1], resolved[PATH_MAX];
    char buf[TT_CONFIG_ERR], jpath[64];
    const char *src = source(x, k, -1, buf, sizeof buf);
    key_path(k, jpath, sizeof jpath);
    bool root = strcmp(x->c->dir, "/") == 0;
    snprintf(joined, sizeof joined, "%s%s%s", p[0] == '/' ? "" : x->c->dir,
             p[0] == '/' || root ? "" : "/", p);
    struct stat st;
    if (!realpath(joined, resolved) || stat(resolved, &st) != 0)
        return fail(x, src, jpath, "cannot open %s: %s", joined, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fail(x, src, jpath, "found %s %s; allowed: a readable regular file",
                    S_ISDIR(st.st_mode) ? "the directory" : "the special file", joined);
    FILE *f = fopen(resolved, "rb");
    if (!f) return fail(x, src, jpath, "cannot open %s: %s", joined, strerror(errno));
    fclose(f);
    if (strlen(resolved) >= TT_CONFIG_PATH)
        return fail(x, src, jpath, "the absolute path %s is longer than %d bytes", resolved,
                    TT_CONFIG_PATH - 1);
    strcpy(p, resolved);
    return 0;
}

/* The rules between keys, the defaults that depend on other keys, then the data files. */
static int check_rules(ctx *x)
{
    tt_config *c = x->c;
    char src[TT_CONFIG_ERR];
    int seq_len = key_index("data", "seq_len");
    int max_len = key_index("model", "max_len"), d_model = key_index("model", "d_model");
    int n_heads = key_index("model", "n_heads"), causal = key_index("model", "causal");
    int task = key_index("data", "task");
#ifndef TT_WITH_CUDA
    if (c->device == TT_CUDA)
        return fail(x, source(x, key_index(NULL, "device"), -1, src, sizeof src), "device",
                    "found \"cuda\"; this build has no CUDA (build with make CUDA=1)");
#endif
    if (!x->val[max_len]) c->model.max_len = c->data.seq_len;
    if (c->data.seq_len > c->model.max_len)
        return fail(x, source(x, seq_len, max_len, src, sizeof src), "data.seq_len",
                    "found %d, more than model.max_len (%d)", c->data.seq_len, c->model.max_len);
    if (c->model.d_model % c->model.n_heads)
        return fail(x, source(x, d_model, n_heads, src, sizeof src), "model.d_model",
                    "found %d; must be divisible by model.n_heads (%d)", c->model.d_model,
                    c->model.n_heads);
    int s_d = key_index("study", "d_model"), s_h = key_index("study", "n_heads");
    if (c->study.d_model % c->study.n_heads)
        return fail(x, source(x, s_d, s_h, src, sizeof src), "study.d_model",
                    "found %d; must be divisible by study.n_heads (%d)", c->study.d_model,
                    c->study.n_heads);
    if (!x->val[causal]) c->model.causal = c->data.task == TT_TASK_LM;
    if (c->data.task == TT_TASK_LM && !c->model.causal)
        return fail(x, source(x, causal, task, src, sizeof src), "model.causal",
                    "found false; task \"lm\" requires true (a language model must not see the "
                    "tokens it predicts)");
    if (!x->val[key_index("output", "dir")]) {
        const char *slash = strrchr(c->path, '/'), *stem = slash ? slash + 1 : c->path;
        size_t n = strlen(stem);
        if (n > 5 && strcmp(stem + n - 5, ".json") == 0) n -= 5;
        snprintf(c->output.dir, sizeof c->output.dir, "runs/%.*s", (int)n, stem);
        if (tt_term_printable_prefix(stem, n) < n)
            return fail(x, x->path, "output.dir", "its default, runs/%.*s from the config's name, "
                        "holds %s; allowed: printable UTF-8 text\nHINT: give output.dir "
                        "(--set output.dir=runs/NAME)", (int)n, stem, NOT_SHOWN);
    }
    int sched = key_index("train", "schedule_epochs");
    c->train.schedule_epochs_set = x->val[sched] != NULL;
    if (!x->val[sched]) c->train.schedule_epochs = c->train.epochs;
    int valid = key_index("data", "valid"), share = key_index("data", "valid_share");
    if (x->val[valid] && x->val[share])
        return fail(x, source(x, share, valid, src, sizeof src), "data.valid_share",
                    "found %g, and data.valid too; give one of them: data.valid (a file of "
                    "validation examples) or data.valid_share (a share of data.train's)\n"
                    "HINT: --set data.valid=null drops a data.valid that the file gives",
                    c->data.valid_share);
    if (x->val[share]) c->data.valid[0] = '\0'; /* no file: the split is drawn from data.train */
    if (x->no_files) return 0;
    if (resolve_file(x, key_index("data", "train"))) return -1;
    return x->val[share] ? 0 : resolve_file(x, valid);
}

/* The whole file, NUL-terminated (malloc'ed), or NULL with the message: at most
 * TT_CONFIG_MAX_BYTES, no NUL byte (so /dev/zero ends at once). */
static char *read_text(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        tt_errorf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t n;
    tt_read_bounded(f, path, TT_CONFIG_MAX_BYTES, "a config is UTF-8 JSON text of at most "
                    "16 MiB", &text, &n, err, errlen);
    fclose(f);
    return text;
}

static int parse(const ctx *x, const char *text, cJSON **root)
{
    const char *end = NULL;
    *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!*root) {
        const char *at = end ? end : text;
        if (!text[strspn(text, " \t\r\n")])
            return fail(x, x->path, NULL, "the file is empty; allowed: a JSON object");
        int line = 1, col = 1;
        for (const char *p = text; p < at; p++) {
            if (*p == '\n')
                line++, col = 1;
            else if (((unsigned char)*p & 0xC0) != 0x80)
                col++; /* count characters, not bytes */
        }
        int near = (int)strcspn(at, "\r\n");
        return tt_errorf(x->err, x->errlen, "%s:%d:%d: invalid JSON %s%.*s%s", x->path, line, col,
                         *at ? "near '" : "at the end of the file", near < 24 ? near : 24, at,
                         *at ? "'" : "");
    }
    if (!cJSON_IsObject(*root)) {
        char found[128];
        return fail(x, x->path, NULL, "found %s at the top level; allowed: a JSON object",
                    describe(*root, true, found, sizeof found));
    }
    char jpath[256];
    bool key;
    if (tt_json_nul_path(text, *root, jpath, sizeof jpath, &key)) /* a key: up to the NUL */
        return fail(x, x->path, jpath, "found a %s holding \\u0000 %s", key ? "key" : "string",
                    NUL_WHY);
    return 0;
}

/* The overrides, the shape, every key, then the rules: the same for a file and for text. */
static int validate(ctx *x, cJSON *root, const char *const *sets, int n_sets)
{
    int rc = 0;
    for (int i = 0; i < n_sets && !rc; i++)
        rc = apply_set(x, root, sets[i]);
    if (!rc) rc = check_shape(x, root);
    for (int k = 0; k < TT_CONFIG_N_KEYS && !rc; k++)
        rc = read_key(x, root, k);
    return rc ? rc : check_rules(x);
}

static int load(ctx *x, cJSON **root, const char *const *sets, int n_sets)
{
    tt_config *c = x->c;
    char folder[TT_CONFIG_PATH], resolved[PATH_MAX];
    if (strlen(x->path) >= TT_CONFIG_PATH)
        return tt_errorf(x->err, x->errlen, "%.64s...: the config path is longer than %d bytes",
                         x->path, TT_CONFIG_PATH - 1);
    strcpy(c->path, x->path);
    char *text = read_text(x->path, x->err, x->errlen);
    if (!text) return -1;
    int rc = parse(x, text, root);
    free(text);
    /* The folder, absolute: data paths are relative to it. */
    const char *slash = strrchr(x->path, '/');
    int n = slash ? (int)(slash - x->path) : 1;
    snprintf(folder, sizeof folder, "%.*s", n ? n : 1, slash ? (n ? x->path : "/") : ".");
    if (!rc && (!realpath(folder, resolved) || strlen(resolved) >= sizeof c->dir))
        rc = tt_errorf(x->err, x->errlen, "%s: cannot resolve its folder %s", x->path, folder);
    if (!rc) strcpy(c->dir, resolved);
    return rc ? rc : validate(x, *root, sets, n_sets);
}

int tt_config_load(tt_config *c, const char *path, const char *const *sets, int n_sets, char *err,
                   size_t errlen)
{
    memset(c, 0, sizeof *c);
    ctx x = {.c = c, .path = path, .err = err, .errlen = errlen};
    cJSON *root = NULL;
    int rc = load(&x, &root, sets, n_sets);
    cJSON_Delete(root);
    if (rc) tt_config_free(c);
    return rc;
}

int tt_config_from_text(tt_config *c, const char *text, const char *origin,
                        const char *const *sets, int n_sets, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    ctx x = {.c = c, .path = origin, .err = err, .errlen = errlen, .no_files = true};
    snprintf(c->path, sizeof c->path, "%s", origin);
    strcpy(c->dir, "/"); /* a resolved config's data paths are absolute */
    cJSON *root = NULL;
    int rc = parse(&x, text, &root);
    if (!rc) rc = validate(&x, root, sets, n_sets);
    cJSON_Delete(root);
    if (rc) tt_config_free(c);
    return rc;
}

void tt_config_free(tt_config *c)
{
    for (int i = 0; i < c->data.n_probes && c->data.probes; i++)
        free(c->data.probes[i]);
    for (int i = 0; i < c->data.n_ambiguous && c->data.ambiguous; i++)
        free(c->data.ambiguous[i]);
    free(c->data.probes);
    free(c->data.ambiguous);
    memset(c, 0, sizeof *c);
}

const char *tt_task_name(tt_task t)
{
    static const char *const names[] = {"tag", "classify", "mlm", "lm"};
    return (unsigned)t < 4 ? names[t] : "?";
}
