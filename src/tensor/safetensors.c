/* safetensors.c: the safetensors reader (full validation, see safetensors.h); the writer is in
 * safetensors_write.c. The reader parses the header with cJSON, checks every entry, then sorts the entries by
 * offset and walks them once: each must start where the previous one ended, and the last must
 * end at the end of the file, so overlaps, holes and trailing bytes are all caught by one loop.
 * JSON numbers are doubles in cJSON, so integers are accepted only below 2^53, where a double
 * still holds every integer exactly. */
#include "tensor/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {
    [TT_ST_F32] = {"F32", 4}, [TT_ST_F64] = {"F64", 8}, [TT_ST_I32] = {"I32", 4},
    [TT_ST_I64] = {"I64", 8},
};
#define N_DTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

size_t tt_st_dtype_size(tt_st_dtype dt)
{
    TT_ASSERT_MSG((int)dt >= 0 && (int)dt < N_DTYPES, "bad safetensors dtype %d", (int)dt);
    return dtypes[dt].size;
}

const char *tt_st_dtype_name(tt_st_dtype dt)
{
    TT_ASSERT_MSG((int)dt >= 0 && (int)dt < N_DTYPES, "bad safetensors dtype %d", (int)dt);
    return dtypes[dt].name;
}

/* Messages start with the source (path or `what`) unless it is NULL; err may be NULL. */
typedef struct errctx {
    const char *what;
    char *err;
    size_t errlen;
} errctx;

static int fail(const errctx *c, const char *fmt, ...) TT_PRINTF(2, 3);
static int fail(const errctx *c, const char *fmt, ...)
{
    if (!c->err || !c->errlen) return -1;
    int len = c->what ? snprintf(c->err, c->errlen, "%s: ", c->what) : 0;
    if (len >= 0 && (size_t)len < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + len, c->errlen - (size_t)len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

const char *tt_st_shape_str(int ndim, const int64_t *shape, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%" PRId64, i ? "," : "", shape[i]);
    if (at < len) snprintf(buf + at, len - at, "]");
    return buf;
}

/* What a JSON value is, for messages: the number itself, or its kind. */
static const char *describe(const cJSON *j, char *buf, size_t len)
{
    if (cJSON_IsNumber(j)) snprintf(buf, len, "%.17g", j->valuedouble);
    else if (cJSON_IsString(j)) snprintf(buf, len, "a string");
    else if (cJSON_IsArray(j)) snprintf(buf, len, "an array");
    else if (cJSON_IsObject(j)) snprintf(buf, len, "an object");
    else if (cJSON_IsBool(j)) snprintf(buf, len, "a boolean");
    else snprintf(buf, len, "null");
    return buf;
}

/* An integer in [0, 2^53): 1.5, -1, 1e300 are rejected. */
static bool json_uint(const cJSON *j, int64_t *out)
{
    if (!cJSON_IsNumber(j)) return false;
    double v = j->valuedouble;
    if (!(v >= 0.0 && v <= TT_ST_MAX_INT) || v != floor(v)) return false;
    *out = (int64_t)v;
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A name that occurs twice in names[0..n), or NULL; sorting keeps a hostile header with a
 * million keys from taking n^2 time. */
static const char *find_duplicate(char *const *names, int n)
{
    if (n < 2) return NULL;
    char **sorted = tt_xmalloc((size_t)n * sizeof *sorted);
    memcpy(sorted, names, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_str);
    const char *dup = NULL;
    for (int i = 1; i < n && !dup; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) dup = sorted[i];
    free(sorted);
    return dup;
}

/* An entry while parsing: its offsets, and its position in the header to break ties between
 * zero-size tensors at the same offset deterministically. */
typedef struct slot {
    tt_st_entry e;
    int64_t begin, end;
    int order;
} slot;

static int cmp_slot(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

#define ENTRY_KEYS "dtype, shape, data_offsets"

static int parse_entry(const errctx *c, const cJSON *j, slot *s, int64_t data_size)
{
    const char *name = j->string;
    char buf[64], sbuf[256];
    if (!cJSON_IsObject(j))
        return fail(c, "tensor \"%s\": entry is %s; expected an object with keys " ENTRY_KEYS,
                    name, describe(j, buf, sizeof buf));
    const cJSON *dt = NULL, *sh = NULL, *off = NULL;
    for (const cJSON *k = j->child; k; k = k->next) {
        const cJSON **to = strcmp(k->string, "dtype") == 0          ? &dt
                           : strcmp(k->string, "shape") == 0        ? &sh
                           : strcmp(k->string, "data_offsets") == 0 ? &off
                                                                    : NULL;
        if (!to)
            return fail(c, "tensor \"%s\": unexpected key \"%s\"; allowed keys: " ENTRY_KEYS,
                        name, k->string);
        if (*to) return fail(c, "tensor \"%s\": duplicate key \"%s\"", name, k->string);
        *to = k;
    }
    const char *missing = !dt ? "dtype" : !sh ? "shape" : !off ? "data_offsets" : NULL;
    if (missing)
        return fail(c, "tensor \"%s\": missing key \"%s\"; required keys: " ENTRY_KEYS, name,
                    missing);

    if (!cJSON_IsString(dt))
        return fail(c, "tensor \"%s\": dtype is %s; expected one of F32, F64, I32, I64", name,
                    describe(dt, buf, sizeof buf));
    int d = 0;
    while (d < N_DTYPES && strcmp(dt->valuestring, dtypes[d].name) != 0) d++;
    if (d == N_DTYPES)
        return fail(c, "tensor \"%s\": unknown dtype \"%s\"; allowed: F32, F64, I32, I64", name,
                    dt->valuestring);
    s->e.dtype = (tt_st_dtype)d;

    if (!cJSON_IsArray(sh))
        return fail(c, "tensor \"%s\": shape is %s; expected an array of non-negative integers",
                    name, describe(sh, buf, sizeof buf));
    int ndim = cJSON_GetArraySize(sh);
    if (ndim > TT_ST_MAX_DIMS)
        return fail(c, "tensor \"%s\": shape has %d dims; at most %d are allowed", name, ndim,
                    TT_ST_MAX_DIMS);
    s->e.ndim = 0;
    for (const cJSON *v = sh->child; v; v = v->next, s->e.ndim++)
        if (!json_uint(v, &s->e.shape[s->e.ndim]))
            return fail(c, "tensor \"%s\": shape[%d] is %s; expected an integer in [0, 2^53)",
                        name, s->e.ndim, describe(v, buf, sizeof buf));
    /* A zero dim anywhere makes the tensor empty, whatever the other dims multiply to. */
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) numel = s->e.shape[i] ? numel : 0;
    for (int i = 0; i < ndim && numel; i++) {
        if (numel > INT64_MAX / s->e.shape[i] / (int64_t)dtypes[d].size)
            return fail(c, "tensor \"%s\": shape %s has too many elements; the element count "
                        "overflows", name, tt_st_shape_str(ndim, s->e.shape, sbuf, sizeof sbuf));
        numel *= s->e.shape[i];
    }
    s->e.numel = numel;

    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2) {
        if (cJSON_IsArray(off))
            snprintf(buf, sizeof buf, "an array of %d elements", cJSON_GetArraySize(off));
        else describe(off, buf, sizeof buf);
        return fail(c, "tensor \"%s\": data_offsets is %s; expected two integers [begin, end]",
                    name, buf);
    }
    if (!json_uint(off->child, &s->begin) || !json_uint(off->child->next, &s->end)) {
        int i = !json_uint(off->child, &s->begin) ? 0 : 1;
        return fail(c, "tensor \"%s\": data_offsets[%d] is %s; expected an integer in "
                    "[0, 2^53)", name, i, describe(i ? off->child->next : off->child, buf,
                                                   sizeof buf));
    }
    if (s->begin > s->end)
        return fail(c, "tensor \"%s\": data_offsets [%" PRId64 ", %" PRId64 "] have begin > end",
                    name, s->begin, s->end);
    int64_t want = numel * (int64_t)dtypes[d].size;
    if (s->end - s->begin != want)
        return fail(c, "tensor \"%s\": data_offsets [%" PRId64 ", %" PRId64 "] span %" PRId64
                    " bytes; %s with shape %s needs %" PRId64, name, s->begin, s->end,
                    s->end - s->begin, dtypes[d].name,
                    tt_st_shape_str(ndim, s->e.shape, sbuf, sizeof sbuf), want);
    if (s->end > data_size)
        return fail(c, "tensor \"%s\": data_offsets [%" PRId64 ", %" PRId64 "] end outside the "
                    "data buffer of %" PRId64 " bytes", name, s->begin, s->end, data_size);
    s->e.nbytes = (size_t)want;
    return 0;
}

static int parse_meta(const errctx *c, const cJSON *j, tt_st_file *f)
{
    char buf[64];
    if (!cJSON_IsObject(j))
        return fail(c, "__metadata__ is %s; expected an object of string values",
                    describe(j, buf, sizeof buf));
    int n = cJSON_GetArraySize(j);
    f->meta_keys = tt_xcalloc((size_t)n, sizeof(char *));
    f->meta_vals = tt_xcalloc((size_t)n, sizeof(char *));
    for (const cJSON *k = j->child; k; k = k->next) {
        if (!cJSON_IsString(k))
            return fail(c, "__metadata__[\"%s\"] is %s; expected a string", k->string,
                        describe(k, buf, sizeof buf));
        f->meta_keys[f->n_meta] = tt_xstrdup(k->string);
        f->meta_vals[f->n_meta++] = tt_xstrdup(k->valuestring);
    }
    const char *dup = find_duplicate(f->meta_keys, f->n_meta);
    if (dup) return fail(c, "__metadata__ has the key \"%s\" twice; keys must be unique", dup);
    return 0;
}

/* The 8-byte header length n of a file of `size` bytes, checked against the size. */
static int check_length(const errctx *c, uint64_t n, uint64_t size)
{
    if (size < 8)
        return fail(c, "file is %" PRIu64 " bytes, shorter than the 8-byte header length", size);
    if (n == 0) return fail(c, "header length is 0; the header must be a JSON object");
    if (n > TT_ST_MAX_HEADER)
        return fail(c, "header length %" PRIu64 " exceeds the limit of %u bytes", n,
                    TT_ST_MAX_HEADER);
    if (n > size - 8)
        return fail(c, "header length %" PRIu64 " exceeds the file size (%" PRIu64 " bytes after "
                    "the 8-byte length); the file is truncated or not safetensors", n, size - 8);
    return 0;
}

static uint64_t le64(const uint8_t *b)
{
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
    return n;
}

/* Validates the header hdr[0..n) against a data buffer of data_size bytes and fills f's entries
 * (offsets only, data NULL) and metadata. Nothing of the data is needed. */
static int parse_header(tt_st_file *f, const uint8_t *hdr, size_t n, int64_t data_size,
                        const errctx *c)
{
    const void *nul = memchr(hdr, 0, n);
    if (nul)
        return fail(c, "header has a NUL byte at offset %td; expected UTF-8 JSON",
                    (const uint8_t *)nul - hdr);
    size_t bad = tt_utf8_valid_prefix((const char *)hdr, n);
    if (bad < n) return fail(c, "header is not valid UTF-8 at byte %zu", bad);

    /* A NUL-terminated copy: cJSON then never needs to look past the header. */
    char *text = tt_xmalloc(n + 1);
    memcpy(text, hdr, n);
    text[n] = 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, n + 1, &end, false);
    int rc = 0;
    if (!root) {
        rc = fail(c, "header is not valid JSON (error at byte %td); expected a JSON object",
                  end ? end - text : 0);
        goto out;
    }
    /* Only padding may follow the object: cJSON stops after the first value. */
    for (const char *p = end; *p; p++)
        if (!strchr(" \t\r\n", *p)) {
            rc = fail(c, "header has bytes after the JSON object (at byte %td); only "
                      "whitespace padding is allowed", p - text);
            goto out;
        }
    char kind[64];
    if (!cJSON_IsObject(root)) {
        rc = fail(c, "header is %s; expected a JSON object", describe(root, kind, sizeof kind));
        goto out;
    }

    int cap = cJSON_GetArraySize(root), ns = 0;
    slot *slots = tt_xcalloc((size_t)cap, sizeof *slots);
    bool seen_meta = false;
    for (const cJSON *j = root->child; j && rc == 0; j = j->next) {
        if (strcmp(j->string, "__metadata__") == 0) {
            if (seen_meta) rc = fail(c, "header has the key \"__metadata__\" twice");
            else rc = parse_meta(c, j, f);
            seen_meta = true;
            continue;
        }
        slot *s = &slots[ns];
        s->order = ns;
        rc = parse_entry(c, j, s, data_size);
        if (rc == 0) s->e.name = tt_xstrdup(j->string);
        ns += rc == 0;
    }
    if (rc == 0) {
        char **names = tt_xmalloc((size_t)ns * sizeof *names);
        for (int i = 0; i < ns; i++) names[i] = slots[i].e.name;
        const char *dup = find_duplicate(names, ns);
        if (dup) rc = fail(c, "duplicate tensor name \"%s\"; names must be unique", dup);
        free(names);
    }
    if (rc == 0) {
        qsort(slots, (size_t)ns, sizeof *slots, cmp_slot);
        int64_t at = 0; /* where the next tensor must begin */
        for (int i = 0; i < ns && rc == 0; i++) {
            slot *s = &slots[i];
            if (s->begin < at)
                rc = fail(c, "tensor \"%s\": data_offsets [%" PRId64 ", %" PRId64 "] overlap "
                          "tensor \"%s\" [%" PRId64 ", %" PRId64 "]", s->e.name, s->begin,
                          s->end, slots[i - 1].e.name, slots[i - 1].begin, slots[i - 1].end);
            else if (s->begin > at)
                rc = fail(c, "bytes [%" PRId64 ", %" PRId64 ") of the data buffer belong to no "
                          "tensor; tensors must cover the buffer without holes", at, s->begin);
            at = s->end;
        }
        if (rc == 0 && at != data_size)
            rc = fail(c, "bytes [%" PRId64 ", %" PRId64 ") at the end of the data buffer belong "
                      "to no tensor; tensors must cover the buffer without holes", at, data_size);
    }
    if (rc == 0) {
        f->entries = tt_xcalloc((size_t)ns, sizeof *f->entries);
        f->n = ns;
        for (int i = 0; i < ns; i++) {
            f->entries[i] = slots[i].e;
            f->entries[i].offset = (size_t)slots[i].begin;
        }
        f->data_size = (size_t)data_size;
    } else {
        for (int i = 0; i < ns; i++) free(slots[i].e.name);
    }
    free(slots);
out:
    cJSON_Delete(root);
    free(text);
    return rc;
}

/* f's entries point into buf, the whole file (size bytes, the data from byte `at`), which f
 * takes over. */
static void attach(tt_st_file *f, uint8_t *buf, size_t size, size_t at)
{
    for (int i = 0; i < f->n; i++) f->entries[i].data = buf + at + f->entries[i].offset;
    f->buf = buf;
    f->size = size;
}

/* Empties f (its fd closed) after a failure; returns -1. */
static int drop(tt_st_file *f)
{
    tt_st_close(f);
    return -1;
}

int tt_st_parse(tt_st_file *f, const void *bytes, size_t size, const char *what, char *err,
                size_t errlen)
{
    errctx c = {what, err, errlen};
    memset(f, 0, sizeof *f);
    const uint8_t *b = bytes;
    uint64_t n = size >= 8 ? le64(b) : 0;
    if (check_length(&c, n, size) || parse_header(f, b + 8, n, (int64_t)(size - 8 - n), &c))
        return drop(f);
    uint8_t *buf = tt_xmalloc(size);
    memcpy(buf, bytes, size);
    attach(f, buf, size, 8 + n);
    return 0;
}

/* Reads exactly n bytes at offset `at` of fd; 0, or -1 with the reason in *why. */
static int read_at(int fd, void *to, size_t n, uint64_t at, const char **why)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = pread(fd, (uint8_t *)to + got, n - got, (off_t)(at + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            *why = r < 0 ? strerror(errno) : "the file shrank while reading";
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

int tt_st_open(tt_st_file *f, const char *path, char *err, size_t errlen)
{
    errctx c = {path, err, errlen};
    memset(f, 0, sizeof *f);
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files go on. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return fail(&c, "cannot open: %s", strerror(errno));
    f->fd = fd;
    f->has_fd = true;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fail(&c, "cannot read: %s", strerror(errno));
        return drop(f);
    }
    if (!S_ISREG(st.st_mode)) {
        fail(&c, "cannot read: not a regular file");
        return drop(f);
    }
    uint64_t size = (uint64_t)st.st_size, n = 0;
    uint8_t len[8];
    const char *why = NULL;
    if (size >= 8 && read_at(fd, len, 8, 0, &why) == 0) n = le64(len);
    if (why) fail(&c, "cannot read: %s", why);
    if (why || check_length(&c, n, size)) return drop(f);
    uint8_t *hdr = tt_xmalloc(n);
    int rc = read_at(fd, hdr, n, 8, &why);
    if (rc) fail(&c, "cannot read: %s", why);
    else rc = parse_header(f, hdr, n, (int64_t)(size - 8 - n), &c);
    free(hdr);
    if (rc) return drop(f);
    f->data_at = 8 + n;
    return 0;
}

int tt_st_read_data(tt_st_file *f, const char *path, uint64_t max_data, char *err, size_t errlen)
{
    errctx c = {path, err, errlen};
    TT_ASSERT_MSG(f->has_fd && !f->buf, "tt_st_read_data without tt_st_open");
    if (f->data_size > max_data) {
        fail(&c, "its tensors hold %zu bytes; at most %" PRIu64 " are expected here (the "
             "largest a checkpoint of this model can be)", f->data_size, max_data);
        return drop(f);
    }
    size_t size = f->data_at + f->data_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        fail(&c, "cannot read: no memory for its %zu bytes", size);
        return drop(f);
    }
    const char *why = NULL;
    /* The header is read again with the data: one buffer, laid out as the file. */
    if (read_at(f->fd, buf, size, 0, &why)) {
        free(buf);
        fail(&c, "cannot read: %s", why);
        return drop(f);
    }
    close(f->fd);
    f->has_fd = false;
    attach(f, buf, size, f->data_at);
    return 0;
}

int tt_st_load(tt_st_file *f, const char *path, char *err, size_t errlen)
{
    if (tt_st_open(f, path, err, errlen)) return -1;
    return tt_st_read_data(f, path, UINT64_MAX, err, errlen);
}

const tt_st_entry *tt_st_find(const tt_st_file *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->entries[i].name, name) == 0) return &f->entries[i];
    return NULL;
}

const char *tt_st_meta(const tt_st_file *f, const char *key)
{
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_vals[i];
    return NULL;
}

static int check_read(const tt_st_entry *e, int64_t n, bool want_real, char *err, size_t errlen)
{
    bool kind_ok = (e->dtype == TT_ST_F32 || e->dtype == TT_ST_F64) == want_real;
    if (kind_ok && n == e->numel) return 0;
    errctx c = {NULL, err, errlen};
    char sbuf[256], want[64];
    if (!kind_ok)
        snprintf(want, sizeof want, "%s", want_real ? "F32 or F64 (a real tensor)"
                                                    : "I32 or I64 (an integer tensor)");
    else
        snprintf(want, sizeof want, "%" PRId64 " elements", n);
    return fail(&c, "tensor \"%s\" is %s %s with %" PRId64 " elements; expected %s", e->name,
                dtypes[e->dtype].name, tt_st_shape_str(e->ndim, e->shape, sbuf, sizeof sbuf), e->numel,
                want);
}

/* Both read functions copy through memcpy because entry data may be unaligned. */
int tt_st_read_real(const tt_st_entry *e, real *out, int64_t n, char *err, size_t errlen)
{
    if (check_read(e, n, true, err, errlen) != 0) return -1;
    const uint8_t *p = e->data;
    if (e->dtype == TT_ST_REAL) {
        if (n) memcpy(out, p, e->nbytes);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        if (e->dtype == TT_ST_F32) {
            float v;
            memcpy(&v, p + 4 * i, 4);
            out[i] = (real)v;
        } else {
            double v;
            memcpy(&v, p + 8 * i, 8);
            out[i] = (real)v;
        }
    }
    return 0;
}

int tt_st_read_i32(const tt_st_entry *e, int32_t *out, int64_t n, char *err, size_t errlen)
{
    if (check_read(e, n, false, err, errlen) != 0) return -1;
    const uint8_t *p = e->data;
    if (e->dtype == TT_ST_I32) {
        if (n) memcpy(out, p, e->nbytes);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        if (v < INT32_MIN || v > INT32_MAX) {
            errctx c = {NULL, err, errlen};
            return fail(&c, "tensor \"%s\": I64 element %" PRId64 " = %" PRId64 " is outside "
                        "the int32 range", e->name, i, v);
        }
        out[i] = (int32_t)v;
    }
    return 0;
}

void tt_st_close(tt_st_file *f)
{
    for (int i = 0; i < f->n; i++) free(f->entries[i].name);
    for (int i = 0; i < f->n_meta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_vals[i]);
    }
    free(f->entries);
    free(f->meta_keys);
    free(f->meta_vals);
    free(f->buf);
    if (f->has_fd) close(f->fd);
    memset(f, 0, sizeof *f);
}
