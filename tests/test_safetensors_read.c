/* test_safetensors_read.c: the safetensors reader on hand-built bytes. Files it must accept and
 * the read conversions; every validation error on hand-built buffers (and the main ones through
 * files), each checked for the words that name the problem; garbled and truncated input, which
 * must leave the file struct empty. The writer's tests are in test_safetensors.c. Files live in
 * the test's temporary folder (testutil.h). */
#include "testutil.h"
#include "st_testutil.h"
#include "tensor/safetensors.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* "u64 length + header + data". Headers are written with ' for " so that the tables below stay
 * readable; the data is dlen bytes of `data`, or of zeros when data is NULL. */
static uint8_t *build(const char *hdr, const void *data, size_t dlen, size_t *size)
{
    size_t n = strlen(hdr);
    uint8_t *b = tt_xcalloc(8 + n + dlen, 1);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)n >> (8 * i));
    for (size_t i = 0; i < n; i++) b[8 + i] = hdr[i] == '\'' ? '"' : (uint8_t)hdr[i];
    if (data) memcpy(b + 8 + n, data, dlen);
    *size = 8 + n + dlen;
    return b;
}

static void assert_empty(const tt_st_file *f, const char *label)
{
    ck_assert_msg(f->entries == NULL && f->n == 0 && f->meta_keys == NULL &&
                      f->meta_vals == NULL && f->n_meta == 0 && f->buf == NULL && f->size == 0,
                  "%s: the file struct was not left empty after an error", label);
}

static void expect_reject(const char *label, const void *bytes, size_t size, const char *a,
                          const char *b)
{
    tt_st_file f;
    memset(&f, 0x5a, sizeof f); /* the parser must empty it, not rely on the caller */
    char err[512] = "";
    int rc = tt_st_parse(&f, bytes, size, "mem.st", err, sizeof err);
    ck_assert_msg(rc == -1, "%s: accepted", label);
    tt_st_test_check_message(label, err, "mem.st", a, b);
    assert_empty(&f, label);
    tt_st_close(&f);
}

typedef struct bad_case {
    const char *hdr;
    size_t dlen;
    const char *a, *b;
} bad_case;

static void reject_all(const bad_case *c, int n)
{
    for (int i = 0; i < n; i++) {
        size_t size;
        uint8_t *b = build(c[i].hdr, NULL, c[i].dlen, &size);
        char label[600];
        snprintf(label, sizeof label, "case %d %s", i, c[i].hdr);
        expect_reject(label, b, size, c[i].a, c[i].b);
        free(b);
    }
}

static tt_st_file parse_ok(const char *hdr, const void *data, size_t dlen)
{
    size_t size;
    uint8_t *b = build(hdr, data, dlen, &size);
    tt_st_file f;
    char err[512] = "";
    ck_assert_msg(tt_st_parse(&f, b, size, "mem.st", err, sizeof err) == 0, "%s: %s", hdr, err);
    free(b);
    return f;
}

/* ---- reading ---- */

START_TEST(test_parse_hand_built)
{
    /* Listed out of offset order, unpadded (the data starts at an odd address), with a
     * zero-size tensor sharing an offset, UTF-8 in a name, and a zero dim beside dims whose
     * product would overflow. */
    uint8_t data[12 + 8];
    const int32_t i3[3] = {4, 5, 6};
    const double x = -0.375;
    memcpy(data, i3, 12);
    memcpy(data + 12, &x, 8);
    tt_st_file f = parse_ok("{'x':{'dtype':'F64','shape':[],'data_offsets':[12,20]},"
                            "'\xc3\xa9':{'shape':[0,9007199254740991,9007199254740991],"
                            "'dtype':'I64','data_offsets':[12,12]},"
                            "'__metadata__':{},"
                            "'i':{'data_offsets':[0,12],'dtype':'I32','shape':[3]}}",
                            data, sizeof data);
    ck_assert_int_eq(f.n, 3);
    ck_assert_str_eq(f.entries[0].name, "i");
    ck_assert_str_eq(f.entries[1].name, "\xc3\xa9");
    ck_assert_str_eq(f.entries[2].name, "x");
    ck_assert_int_eq(f.entries[1].numel, 0);
    ck_assert_int_eq(f.entries[2].ndim, 0);
    ck_assert_int_eq(f.entries[2].numel, 1);
    const tt_st_entry *e = tt_st_find(&f, "x");
    ck_assert_uint_ne((uintptr_t)e->data % 8, 0); /* so the reads below must cope */
    real r;
    ck_assert_int_eq(tt_st_read_real(e, &r, 1, NULL, 0), 0);
    ck_assert(r == R(-0.375));
    int32_t got[3];
    ck_assert_int_eq(tt_st_read_i32(tt_st_find(&f, "i"), got, 3, NULL, 0), 0);
    ck_assert(got[0] == 4 && got[1] == 5 && got[2] == 6);
    ck_assert_int_eq(tt_st_read_i32(tt_st_find(&f, "\xc3\xa9"), NULL, 0, NULL, 0), 0);
    tt_st_close(&f);

    /* Whitespace padding after the object, and an empty file with only metadata. */
    f = parse_ok("{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]}}  \n\t ", data, 4);
    ck_assert_int_eq(f.n, 1);
    tt_st_close(&f);
    f = parse_ok("{'__metadata__':{'k':'v','k2':''}}", NULL, 0);
    ck_assert_int_eq(f.n, 0);
    ck_assert_str_eq(tt_st_meta(&f, "k2"), "");
    tt_st_close(&f);
}
END_TEST

START_TEST(test_read_conversions)
{
    const float f32[3] = {1.5f, -2.25f, 0.1f};
    const double f64[3] = {0.1, -3.5, 1.0 / 3.0};
    const int32_t i32[2] = {INT32_MIN, INT32_MAX};
    const int64_t i64[3] = {-5, INT32_MAX, INT32_MIN};
    const int64_t i64_bad[2] = {1, (int64_t)INT32_MAX + 1};
    uint8_t data[12 + 24 + 8 + 24 + 16];
    size_t at = 0;
    memcpy(data + at, f32, 12), at += 12;
    memcpy(data + at, f64, 24), at += 24;
    memcpy(data + at, i32, 8), at += 8;
    memcpy(data + at, i64, 24), at += 24;
    memcpy(data + at, i64_bad, 16), at += 16;
    tt_st_file f = parse_ok("{'f32':{'dtype':'F32','shape':[3],'data_offsets':[0,12]},"
                            "'f64':{'dtype':'F64','shape':[3,1],'data_offsets':[12,36]},"
                            "'i32':{'dtype':'I32','shape':[2],'data_offsets':[36,44]},"
                            "'i64':{'dtype':'I64','shape':[3],'data_offsets':[44,68]},"
                            "'bad':{'dtype':'I64','shape':[2],'data_offsets':[68,84]}}",
                            data, at);
    real r[3];
    int32_t k[3];
    char err[512];
    ck_assert_int_eq(tt_st_read_real(tt_st_find(&f, "f32"), r, 3, err, sizeof err), 0);
    for (int i = 0; i < 3; i++) ck_assert(r[i] == (real)f32[i]);
    ck_assert_int_eq(tt_st_read_real(tt_st_find(&f, "f64"), r, 3, err, sizeof err), 0);
    for (int i = 0; i < 3; i++) ck_assert(r[i] == (real)f64[i]); /* rounded in float32 */
    ck_assert_int_eq(tt_st_read_i32(tt_st_find(&f, "i32"), k, 2, err, sizeof err), 0);
    ck_assert(k[0] == INT32_MIN && k[1] == INT32_MAX);
    ck_assert_int_eq(tt_st_read_i32(tt_st_find(&f, "i64"), k, 3, err, sizeof err), 0);
    ck_assert(k[0] == -5 && k[1] == INT32_MAX && k[2] == INT32_MIN);

    ck_assert_int_eq(tt_st_read_i32(tt_st_find(&f, "bad"), k, 2, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "\"bad\"") && strstr(err, "2147483648") &&
                      strstr(err, "int32 range"), "%s", err);
    ck_assert_int_eq(tt_st_read_real(tt_st_find(&f, "i32"), r, 2, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "\"i32\" is I32 [2] with 2 elements; expected F32 or F64"), "%s",
                  err);
    ck_assert_int_eq(tt_st_read_i32(tt_st_find(&f, "f64"), k, 3, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "\"f64\" is F64 [3,1] with 3 elements; expected I32 or I64"),
                  "%s", err);
    ck_assert_int_eq(tt_st_read_real(tt_st_find(&f, "f64"), r, 2, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "\"f64\" is F64 [3,1] with 3 elements; expected 2"), "%s", err);
    ck_assert_int_eq(tt_st_read_i32(tt_st_find(&f, "i64"), k, 4, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "\"i64\" is I64 [3] with 3 elements; expected 4"), "%s", err);
    tt_st_close(&f);
}
END_TEST

/* ---- every validation error, on bytes in memory ---- */

START_TEST(test_reject_framing)
{
    uint8_t b[32] = {0};
    expect_reject("empty", NULL, 0, "0 bytes", "shorter than the 8-byte");
    expect_reject("5 bytes", b, 5, "5 bytes", "shorter than the 8-byte");
    expect_reject("N = 0", b, 16, "header length is 0", NULL);
    b[0] = 0xe8, b[1] = 0x03; /* N = 1000 in a 20-byte file */
    expect_reject("truncated", b, 20, "header length 1000 exceeds the file size", "12 bytes");
    uint64_t n = TT_ST_MAX_HEADER + 1;
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(n >> (8 * i));
    expect_reject("over the limit", b, 32, "100000001 exceeds the limit", NULL);
    memset(b, 0xff, 8); /* N = 2^64 - 1 */
    expect_reject("2^64-1", b, 32, "18446744073709551615 exceeds the limit", NULL);
    n = TT_ST_MAX_HEADER; /* at the limit: only the file size is wrong */
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(n >> (8 * i));
    expect_reject("at the limit", b, 32, "exceeds the file size", NULL);
    char err[64];
    tt_st_file f;
    ck_assert_int_eq(tt_st_parse(&f, b, 3, "x", NULL, 0), -1); /* err may be NULL */
    ck_assert_int_eq(tt_st_parse(&f, b, 3, "x", err, 4), -1);  /* and is cut to errlen */
    ck_assert_str_eq(err, "x: ");
}
END_TEST

START_TEST(test_reject_header_text)
{
    static const bad_case c[] = {
        {"{'a':", 0, "not valid JSON", NULL},
        {"", 0, "header length is 0", NULL},
        {"   ", 0, "not valid JSON", NULL},
        {"{} x", 0, "bytes after the JSON object", "(at byte 3)"},
        {"{}{}", 0, "bytes after the JSON object", NULL},
        {"[1,2]", 0, "header is an array", "expected a JSON object"},
        {"'str'", 0, "header is a string", NULL},
        {"12", 0, "header is 12", NULL},
        {"{'\xff':1}", 0, "not valid UTF-8 at byte 2", NULL},
        {"{'\xc0\xaf':1}", 0, "not valid UTF-8 at byte 2", NULL},         /* overlong '/' */
        {"{'\xed\xa0\x80':1}", 0, "not valid UTF-8 at byte 2", NULL},     /* surrogate */
        {"{'\xf4\x90\x80\x80':1}", 0, "not valid UTF-8 at byte 2", NULL}, /* > U+10FFFF */
        {"{'\xe2\x9c':1}", 0, "not valid UTF-8 at byte 2", NULL},         /* cut short */
    };
    reject_all(c, (int)(sizeof c / sizeof c[0]));
    size_t size;
    uint8_t *b = build("{'a':1}", NULL, 0, &size);
    b[10] = 0;
    expect_reject("NUL", b, size, "NUL byte at offset 2", NULL);
    free(b);
}
END_TEST

#define T(dtype, shape, off) "{'t':{'dtype':" dtype ",'shape':" shape ",'data_offsets':" off "}}"

START_TEST(test_reject_entries)
{
    static const bad_case c[] = {
        {"{'t':5}", 0, "tensor \"t\": entry is 5", "expected an object"},
        {"{'t':[]}", 0, "entry is an array", NULL},
        {"{'t':{'dtype':'F32','shape':[1]}}", 4, "missing key \"data_offsets\"", NULL},
        {"{'t':{'shape':[1],'data_offsets':[0,4]}}", 4, "missing key \"dtype\"", NULL},
        {"{'t':{'dtype':'F32','data_offsets':[0,4]}}", 4, "missing key \"shape\"", NULL},
        {"{'t':{'dtype':'F32','shape':[1],'data_offsets':[0,4],'x':1}}", 4,
         "unexpected key \"x\"", "allowed keys: dtype, shape, data_offsets"},
        {"{'t':{'dtype':'F32','dtype':'F32','shape':[1],'data_offsets':[0,4]}}", 4,
         "duplicate key \"dtype\"", NULL},
        {T("'BF16'", "[1]", "[0,2]"), 2, "unknown dtype \"BF16\"", "F32, F64, I32, I64"},
        {T("'f32'", "[1]", "[0,4]"), 4, "unknown dtype \"f32\"", "F32, F64, I32, I64"},
        {T("4", "[1]", "[0,4]"), 4, "dtype is 4", "F32, F64, I32, I64"},
    };
    reject_all(c, (int)(sizeof c / sizeof c[0]));
}
END_TEST

START_TEST(test_reject_shapes)
{
    static const bad_case c[] = {
        {T("'F32'", "'2'", "[0,8]"), 8, "shape is a string", "non-negative integers"},
        {T("'F32'", "{}", "[0,8]"), 8, "shape is an object", NULL},
        {T("'F32'", "[2,-1]", "[0,8]"), 8, "shape[1] is -1", "integer in [0, 2^53)"},
        {T("'F32'", "[1.5]", "[0,8]"), 8, "shape[0] is 1.5", NULL},
        {T("'F32'", "['2']", "[0,8]"), 8, "shape[0] is a string", NULL},
        {T("'F32'", "[null]", "[0,8]"), 8, "shape[0] is null", NULL},
        {T("'F32'", "[9007199254740992]", "[0,8]"), 8, "shape[0] is 9007199254740992", NULL},
        {T("'F32'", "[1e300]", "[0,8]"), 8, "shape[0] is 1.0000000000000001e+300", NULL},
        {T("'F32'", "[1,1,1,1,1,1,1,1,1]", "[0,4]"), 4, "shape has 9 dims", "at most 8"},
        {T("'F32'", "[4294967296,4294967296]", "[0,4]"), 4, "[4294967296,4294967296] has too "
         "many elements", "overflows"},
        {T("'I64'", "[1073741824,2147483648]", "[0,4]"), 4, "overflows", NULL}, /* bytes */
    };
    reject_all(c, (int)(sizeof c / sizeof c[0]));
}
END_TEST

START_TEST(test_reject_offsets)
{
    static const bad_case c[] = {
        {T("'F32'", "[2]", "'0,8'"), 8, "data_offsets is a string", "two integers [begin, end]"},
        {T("'F32'", "[2]", "[8]"), 8, "data_offsets is an array of 1 elements", NULL},
        {T("'F32'", "[2]", "[0,8,8]"), 8, "data_offsets is an array of 3 elements", NULL},
        {T("'F32'", "[2]", "[-8,0]"), 8, "data_offsets[0] is -8", "integer in [0, 2^53)"},
        {T("'F32'", "[2]", "[0,8.5]"), 8, "data_offsets[1] is 8.5", NULL},
        {T("'F32'", "[2]", "[0,true]"), 8, "data_offsets[1] is a boolean", NULL},
        {T("'F32'", "[0]", "[0,1e20]"), 8, "data_offsets[1] is 1e+20", NULL},
        {T("'F32'", "[0]", "[8,4]"), 8, "data_offsets [8, 4] have begin > end", NULL},
        {T("'F32'", "[2]", "[0,4]"), 8, "span 4 bytes", "F32 with shape [2] needs 8"},
        {T("'F64'", "[2]", "[0,8]"), 16, "span 8 bytes", "F64 with shape [2] needs 16"},
        {T("'I32'", "[]", "[0,8]"), 8, "span 8 bytes", "I32 with shape [] needs 4"},
        {T("'F32'", "[2]", "[8,16]"), 8, "[8, 16] end outside the data buffer of 8 bytes", NULL},
        {T("'F32'", "[0]", "[9,9]"), 8, "[9, 9] end outside the data buffer", NULL},
    };
    reject_all(c, (int)(sizeof c / sizeof c[0]));
}
END_TEST

#define E(name, off) "'" name "':{'dtype':'F32','shape':[2],'data_offsets':" off "}"
#define Z(name, off) "'" name "':{'dtype':'F32','shape':[0],'data_offsets':" off "}"

START_TEST(test_reject_layout)
{
    static const bad_case c[] = {
        {"{" E("a", "[0,8]") "," E("b", "[4,12]") "}", 12, "tensor \"b\": data_offsets [4, 12] "
         "overlap tensor \"a\" [0, 8]", NULL},
        {"{" E("b", "[4,12]") "," E("a", "[0,8]") "}", 12, "overlap tensor \"a\"", NULL},
        {"{" E("a", "[0,8]") "," E("b", "[0,8]") "}", 8, "overlap", NULL},
        {"{" E("a", "[0,8]") "," Z("z", "[4,4]") "}", 8, "tensor \"z\"", "overlap"},
        {"{" E("a", "[0,8]") "," E("b", "[12,20]") "}", 20, "bytes [8, 12) of the data buffer "
         "belong to no tensor", NULL},
        {"{" E("a", "[4,12]") "}", 12, "bytes [0, 4)", "no tensor"},
        {"{" E("a", "[0,8]") "}", 12, "bytes [8, 12) at the end", "no tensor"},
        {"{}", 4, "bytes [0, 4) at the end", NULL},
        {"{" E("a", "[0,8]") "," E("a", "[8,16]") "}", 16, "duplicate tensor name \"a\"", NULL},
        {"{" Z("a", "[0,0]") "," Z("a", "[0,0]") "}", 0, "duplicate tensor name \"a\"", NULL},
    };
    reject_all(c, (int)(sizeof c / sizeof c[0]));
}
END_TEST

START_TEST(test_reject_metadata)
{
    static const bad_case c[] = {
        {"{'__metadata__':'x'}", 0, "__metadata__ is a string", "object of string values"},
        {"{'__metadata__':['a']}", 0, "__metadata__ is an array", NULL},
        {"{'__metadata__':{'k':1}}", 0, "__metadata__[\"k\"] is 1", "expected a string"},
        {"{'__metadata__':{'a':'1','k':{}}}", 0, "__metadata__[\"k\"] is an object", NULL},
        {"{'__metadata__':{'k':'1','k':'2'}}", 0, "the key \"k\" twice", NULL},
        {"{'__metadata__':{},'__metadata__':{}}", 0, "\"__metadata__\" twice", NULL},
        /* metadata already read when a later entry fails: freed, not leaked (ASan) */
        {"{'__metadata__':{'k':'v'}," E("a", "[0,8]") ",'b':7}", 8, "tensor \"b\"", NULL},
    };
    reject_all(c, (int)(sizeof c / sizeof c[0]));
}
END_TEST

/* Every proper prefix of a valid file must be rejected (it cuts the header or the data), and
 * no single-byte change of the header may crash the reader or yield entries outside the buffer. */
START_TEST(test_garbled_input)
{
    uint8_t data[20] = {0};
    size_t size;
    uint8_t *b = build("{'__metadata__':{'k':'v'}," E("a", "[0,8]") "," Z("z", "[8,8]") ","
                       "'c':{'dtype':'I32','shape':[3],'data_offsets':[8,20]}}",
                       data, sizeof data, &size);
    tt_st_file f;
    ck_assert_int_eq(tt_st_parse(&f, b, size, "ok", NULL, 0), 0);
    tt_st_close(&f);
    for (size_t len = 0; len < size; len++) {
        char label[64];
        snprintf(label, sizeof label, "prefix of %zu bytes", len);
        ck_assert_msg(tt_st_parse(&f, b, len, "cut", NULL, 0) == -1, "%s accepted", label);
        assert_empty(&f, label);
    }
    static const uint8_t subst[] = {'"', '{', '}', '[', ']', ',', ':', '0', '9', '-', ' ',
                                    '\\', 0x80, 0xff, 0};
    size_t hlen = size - 8 - sizeof data;
    int accepted = 0;
    for (size_t i = 8; i < 8 + hlen; i++) {
        uint8_t keep = b[i];
        for (size_t s = 0; s < sizeof subst; s++) {
            b[i] = subst[s];
            if (tt_st_parse(&f, b, size, "mut", NULL, 0) != 0) {
                assert_empty(&f, "mutation");
                continue;
            }
            accepted++;
            for (int k = 0; k < f.n; k++) {
                const uint8_t *p = f.entries[k].data;
                ck_assert(p >= f.buf + 8 + hlen && p + f.entries[k].nbytes <= f.buf + f.size);
            }
            tt_st_close(&f);
        }
        b[i] = keep;
    }
    ck_assert_int_gt(accepted, 0); /* e.g. a changed metadata value or tensor name */
    free(b);
}
END_TEST

/* ---- through files ---- */

static void expect_load_error(const char *path, const char *a, const char *b)
{
    tt_st_file f;
    char err[512] = "";
    memset(&f, 0x5a, sizeof f);
    ck_assert_msg(tt_st_load(&f, path, err, sizeof err) == -1, "%s accepted", path);
    tt_st_test_check_message(path, err, path, a, b);
    assert_empty(&f, path);
    tt_st_close(&f);
}

START_TEST(test_load_errors)
{
    char path[4200];
    const char *dir = tt_test_tmpdir();
    snprintf(path, sizeof path, "%s/missing.safetensors", dir);
    expect_load_error(path, "cannot open", "No such file");
    expect_load_error(dir, "not a regular file", NULL);

    snprintf(path, sizeof path, "%s/short.safetensors", dir);
    tt_st_test_spit(path, "\x02\0\0", 3);
    expect_load_error(path, "3 bytes", "shorter than the 8-byte");

    size_t size;
    uint8_t data[16] = {0};
    uint8_t *b = build("{" E("a", "[0,8]") "," E("b", "[8,16]") "}", data, 16, &size);
    snprintf(path, sizeof path, "%s/data_cut.safetensors", dir);
    tt_st_test_spit(path, b, size - 3);
    expect_load_error(path, "tensor \"b\"", "end outside the data buffer of 13 bytes");
    snprintf(path, sizeof path, "%s/header_cut.safetensors", dir);
    tt_st_test_spit(path, b, 30);
    expect_load_error(path, "exceeds the file size", "truncated");
    free(b);

    uint8_t big[16] = {0x00, 0xc2, 0xeb, 0x0b}; /* N = 200000000 */
    snprintf(path, sizeof path, "%s/big_header.safetensors", dir);
    tt_st_test_spit(path, big, sizeof big);
    expect_load_error(path, "header length 200000000 exceeds the limit", NULL);

    b = build("{" E("a", "[0,8]") "," E("b", "[4,12]") "}", data, 12, &size);
    snprintf(path, sizeof path, "%s/overlap.safetensors", dir);
    tt_st_test_spit(path, b, size);
    expect_load_error(path, "overlap tensor \"a\"", NULL);
    free(b);

    b = build(T("'F16'", "[2]", "[0,4]"), data, 4, &size);
    snprintf(path, sizeof path, "%s/dtype.safetensors", dir);
    tt_st_test_spit(path, b, size);
    expect_load_error(path, "unknown dtype \"F16\"", "F32, F64, I32, I64");
    free(b);
}
END_TEST

Suite *safetensors_read_suite(void)
{
    Suite *s = suite_create("safetensors_read");
    TCase *tc = tcase_create("read");
    tcase_add_checked_fixture(tc, tt_tmp_setup, tt_tmp_teardown);
    tcase_add_test(tc, test_parse_hand_built);
    tcase_add_test(tc, test_read_conversions);
    tcase_add_test(tc, test_reject_framing);
    tcase_add_test(tc, test_reject_header_text);
    tcase_add_test(tc, test_reject_entries);
    tcase_add_test(tc, test_reject_shapes);
    tcase_add_test(tc, test_reject_offsets);
    tcase_add_test(tc, test_reject_layout);
    tcase_add_test(tc, test_reject_metadata);
    tcase_add_test(tc, test_garbled_input);
    tcase_add_test(tc, test_load_errors);
    suite_add_tcase(s, tc);
    return s;
}
