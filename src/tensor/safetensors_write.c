/* safetensors_write.c: the safetensors writer (see safetensors.h). Tensors go out in insertion
 * order, back to back; the header is padded with spaces so the data starts 8-byte aligned; the
 * file is written to PATH.tmp.XXXXXX (tt_atomic_open) and renamed over PATH, so a reader never sees half a file
 * and a failed save leaves an existing PATH as it was. */
#include "tensor/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void tt_st_writer_init(tt_st_writer *w) { memset(w, 0, sizeof *w); }

void tt_st_writer_add(tt_st_writer *w, const char *name, tt_st_dtype dt, int ndim,
                      const int64_t *shape, const void *data)
{
    TT_ASSERT_MSG(name && strcmp(name, "__metadata__") != 0,
                  "safetensors: tensor name %s%s%s is reserved or missing", name ? "\"" : "",
                  name ? name : "NULL", name ? "\"" : "");
    TT_ASSERT_MSG(ndim >= 0 && ndim <= TT_ST_MAX_DIMS,
                  "safetensors: tensor \"%s\" has %d dims; at most %d are allowed", name, ndim,
                  TT_ST_MAX_DIMS);
    for (int i = 0; i < w->n; i++)
        TT_ASSERT_MSG(strcmp(w->t[i].name, name) != 0,
                      "safetensors: duplicate tensor name \"%s\"", name);
    size_t size = tt_st_dtype_size(dt);
    /* The reader takes offsets only below 2^53, so no tensor may be larger. */
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        TT_ASSERT_MSG(shape[i] >= 0, "safetensors: tensor \"%s\" has dim %d = %" PRId64, name,
                      i, shape[i]);
        TT_ASSERT_MSG(shape[i] == 0 || numel <= (int64_t)TT_ST_MAX_INT / (int64_t)size / shape[i],
                      "safetensors: tensor \"%s\" is too large", name);
        numel *= shape[i];
    }
    TT_ASSERT_MSG(data || numel == 0, "safetensors: tensor \"%s\" has NULL data", name);
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->t = tt_xrealloc(w->t, (size_t)w->cap * sizeof *w->t);
    }
    tt_st_wtensor *t = &w->t[w->n++];
    memset(t, 0, sizeof *t);
    t->name = tt_xstrdup(name);
    t->dtype = dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->data = data;
    t->nbytes = (size_t)numel * size;
}

void tt_st_writer_meta(tt_st_writer *w, const char *key, const char *value)
{
    TT_ASSERT_MSG(key && value, "safetensors: NULL metadata key or value");
    for (int i = 0; i < w->n_meta; i++)
        if (strcmp(w->meta_keys[i], key) == 0) {
            free(w->meta_vals[i]);
            w->meta_vals[i] = tt_xstrdup(value);
            return;
        }
    if (w->n_meta == w->meta_cap) {
        w->meta_cap = w->meta_cap ? 2 * w->meta_cap : 8;
        w->meta_keys = tt_xrealloc(w->meta_keys, (size_t)w->meta_cap * sizeof(char *));
        w->meta_vals = tt_xrealloc(w->meta_vals, (size_t)w->meta_cap * sizeof(char *));
    }
    w->meta_keys[w->n_meta] = tt_xstrdup(key);
    w->meta_vals[w->n_meta++] = tt_xstrdup(value);
}

/* cJSON returns NULL only when malloc fails: the same fatal error as tt_xmalloc. */
static void *cj(void *p)
{
    TT_ASSERT_MSG(p, "safetensors: out of memory while building the header");
    return p;
}

/* The header JSON, padded with spaces so that the data starts 8-byte aligned in the file. */
static char *header_json(const tt_st_writer *w, size_t *len)
{
    cJSON *root = cj(cJSON_CreateObject());
    if (w->n_meta) {
        cJSON *m = cj(cJSON_AddObjectToObject(root, "__metadata__"));
        for (int i = 0; i < w->n_meta; i++)
            cj(cJSON_AddStringToObject(m, w->meta_keys[i], w->meta_vals[i]));
    }
    /* Integers go in raw: cJSON prints numbers with %.15g, so 10^15 would become "1e+15",
     * which strict readers (the reference's u64) reject. */
    char raw[TT_ST_MAX_DIMS * 21 + 8];
    int64_t at = 0;
    for (int i = 0; i < w->n; i++) {
        const tt_st_wtensor *t = &w->t[i];
        cJSON *o = cj(cJSON_AddObjectToObject(root, t->name));
        cj(cJSON_AddStringToObject(o, "dtype", tt_st_dtype_name(t->dtype)));
        cj(cJSON_AddRawToObject(o, "shape", tt_st_shape_str(t->ndim, t->shape, raw, sizeof raw)));
        snprintf(raw, sizeof raw, "[%" PRId64 ",%" PRId64 "]", at, at + (int64_t)t->nbytes);
        cj(cJSON_AddRawToObject(o, "data_offsets", raw));
        at += (int64_t)t->nbytes;
    }
    char *text = cj(cJSON_PrintUnformatted(root));
    cJSON_Delete(root);
    size_t n = strlen(text), padded = (n + 7) / 8 * 8; /* 8 + padded is a multiple of 8 */
    char *out = tt_xmalloc(padded);
    memcpy(out, text, n);
    memset(out + n, ' ', padded - n);
    cJSON_free(text);
    *len = padded;
    return out;
}

int tt_st_writer_save(tt_st_writer *w, const char *path, char *err, size_t errlen)
{
    size_t hlen;
    char *hdr = header_json(w, &hlen);
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    tt_atomic_file o;
    int rc = tt_atomic_open(&o, path, err, errlen);
    if (rc == 0) {
        bool ok = fwrite(len8, 1, 8, o.f) == 8 && fwrite(hdr, 1, hlen, o.f) == hlen;
        for (int i = 0; ok && i < w->n; i++)
            ok = !w->t[i].nbytes ||
                 fwrite(w->t[i].data, 1, w->t[i].nbytes, o.f) == w->t[i].nbytes;
        if (!ok) tt_errorf(err, errlen, "%s: cannot write %s: %s", path, o.tmp, strerror(errno));
        rc = tt_atomic_close(&o, ok, err, errlen);
    }
    free(hdr);
    return rc;
}

void tt_st_writer_free(tt_st_writer *w)
{
    for (int i = 0; i < w->n; i++) free(w->t[i].name);
    for (int i = 0; i < w->n_meta; i++) {
        free(w->meta_keys[i]);
        free(w->meta_vals[i]);
    }
    free(w->t);
    free(w->meta_keys);
    free(w->meta_vals);
    memset(w, 0, sizeof *w);
}
