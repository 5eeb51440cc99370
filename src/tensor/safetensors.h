/* safetensors.h: read and write the safetensors format (huggingface/safetensors): an 8-byte
 * little-endian header length N, N bytes of UTF-8 JSON (name -> dtype, shape, data_offsets, and
 * an optional "__metadata__" of strings), then the tensors' bytes, which must cover the data
 * buffer exactly. Checkpoints are user input: the reader validates everything and returns -1 with
 * "PATH: what was found; what is allowed" instead of aborting. A loaded tt_st_file owns one copy
 * of the whole file (read only after its header was validated, see tt_st_open); entry names, metadata strings and entry data point into memory it owns and
 * stay valid until tt_st_close. Entry data may be unaligned (the format does not align tensors):
 * read it through tt_st_read_real / tt_st_read_i32, or memcpy. */
#ifndef TT_SAFETENSORS_H
#define TT_SAFETENSORS_H

#include "tensor/common.h"
#include "tensor/real.h"

/* Raw tensor bytes are read and written as host bytes: the format's layout on little-endian
 * hosts only. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors: big-endian host");

#define TT_ST_MAX_DIMS 8
/* JSON numbers are doubles: integers (sizes, offsets) are exact only up to 2^53 - 1. */
#define TT_ST_MAX_INT 9007199254740991.0
/* Largest header the reader accepts, as in the reference implementation. */
#define TT_ST_MAX_HEADER 100000000u

typedef enum tt_st_dtype { TT_ST_F32, TT_ST_F64, TT_ST_I32, TT_ST_I64 } tt_st_dtype;

/* The dtype that holds `real` without conversion. */
#ifdef TT_DOUBLE
#define TT_ST_REAL TT_ST_F64
#else
#define TT_ST_REAL TT_ST_F32
#endif

size_t tt_st_dtype_size(tt_st_dtype dt);
const char *tt_st_dtype_name(tt_st_dtype dt); /* "F32", "F64", "I32", "I64" */
/* "[2,3]" into buf (JSON, as the header writes shapes); returns buf */
const char *tt_st_shape_str(int ndim, const int64_t *shape, char *buf, size_t len);

typedef struct tt_st_entry {
    char *name;
    tt_st_dtype dtype;
    int ndim;
    int64_t shape[TT_ST_MAX_DIMS];
    int64_t numel;    /* 1 for a scalar (ndim 0), 0 when a dim is 0 */
    const void *data; /* into the file's buffer, valid until tt_st_close; may be unaligned */
    size_t nbytes;
    size_t offset;    /* of the data in the file's data buffer (after the header) */
} tt_st_entry;

typedef struct tt_st_file {
    tt_st_entry *entries; /* in order of data offset */
    int n;
    char **meta_keys, **meta_vals; /* in header order */
    int n_meta;
    uint8_t *buf; /* the whole file, owned; NULL between tt_st_open and tt_st_read_data */
    size_t size;
    size_t data_at, data_size; /* where the data buffer starts in the file, and its size */
    int fd;                    /* the open file, between tt_st_open and tt_st_read_data */
    bool has_fd;
} tt_st_file;

/* Reads and validates PATH into f (f's previous content is overwritten, not freed). 0 on
 * success; -1 with err filled and f left empty (safe to tt_st_close). Never crashes or aborts
 * on any file content. err may be NULL. tt_st_open + tt_st_read_data with no bound. */
int tt_st_load(tt_st_file *f, const char *path, char *err, size_t errlen);
/* The header first, so that no byte of data is read before the file is known to be sound and
 * of a sensible size: tt_st_open opens PATH (a regular file only: a FIFO or a device fails at
 * once, without waiting or reading), reads the length and the header alone, validates them
 * fully, and checks that the data they declare is exactly the rest of the file (fstat). Then
 * entries and metadata are there (entry data NULL, offsets set) and f holds the file open.
 * tt_st_read_data then refuses a data buffer over max_data bytes, else reads the file into one
 * buffer and points the entries into it. Both return 0, or -1 with err ("PATH: ...") and f
 * emptied; tt_st_close also closes a file left open between the two. */
int tt_st_open(tt_st_file *f, const char *path, char *err, size_t errlen);
int tt_st_read_data(tt_st_file *f, const char *path, uint64_t max_data, char *err,
                    size_t errlen);
/* The same validation on bytes in memory (copied); `what` names the source in messages. */
int tt_st_parse(tt_st_file *f, const void *bytes, size_t size, const char *what, char *err,
                size_t errlen);
/* Linear search; NULL if absent. */
const tt_st_entry *tt_st_find(const tt_st_file *f, const char *name);
const char *tt_st_meta(const tt_st_file *f, const char *key); /* NULL if absent */
/* Copy entry e into out (n elements), converting F32/F64 to `real`, or I32/I64 to int32 (an I64
 * value outside the int32 range is an error). -1 with a message naming the tensor, its dtype,
 * numel and what was expected when n != e->numel or the dtype kind is wrong; out may then be
 * partly written. */
int tt_st_read_real(const tt_st_entry *e, real *out, int64_t n, char *err, size_t errlen);
int tt_st_read_i32(const tt_st_entry *e, int32_t *out, int64_t n, char *err, size_t errlen);
/* Frees everything f owns and empties it; safe on an empty or already closed f. */
void tt_st_close(tt_st_file *f);

/* A list of tensors to save. Names and metadata are copied; tensor data is only referenced, so
 * it must stay alive and unchanged until tt_st_writer_save returns. */
typedef struct tt_st_wtensor {
    char *name;
    tt_st_dtype dtype;
    int ndim;
    int64_t shape[TT_ST_MAX_DIMS];
    const void *data;
    size_t nbytes;
} tt_st_wtensor;

typedef struct tt_st_writer {
    tt_st_wtensor *t; /* in insertion order, which is the order in the file */
    int n, cap;
    char **meta_keys, **meta_vals;
    int n_meta, meta_cap;
} tt_st_writer;

void tt_st_writer_init(tt_st_writer *w);
/* A duplicate name, ndim outside [0, 8], a negative dim or NULL data for a non-empty tensor is a
 * programming error: TT_ASSERT_MSG. */
void tt_st_writer_add(tt_st_writer *w, const char *name, tt_st_dtype dt, int ndim,
                      const int64_t *shape, const void *data);
/* key and value copied; a later call with the same key replaces the value */
void tt_st_writer_meta(tt_st_writer *w, const char *key, const char *value);
/* Atomic: writes PATH.tmp.XXXXXX (tt_atomic_open), fflush, fsync, renames it over PATH. On any failure removes the
 * temporary file (only one it created), leaves an existing PATH untouched and returns -1 with
 * err ("PATH: what failed: strerror"). The writer is unchanged and may be saved again. */
int tt_st_writer_save(tt_st_writer *w, const char *path, char *err, size_t errlen);
void tt_st_writer_free(tt_st_writer *w);

#endif
