/* test_safetensors.c: the safetensors writer, checked through the reader and independently of
 * it. Round trips of every dtype; the bytes of a written file checked with cJSON; saves that fail
 * and must leave the old file and no temporary behind; the writer's programming errors abort.
 * The reader's own tests are in test_safetensors_read.c. Files live in the test's temporary
 * folder (testutil.h). */
#include "testutil.h"
#include "st_testutil.h"
#include "tensor/safetensors.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "opendir %s: %s", dir, strerror(errno));
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_msg(fp != NULL, "open %s: %s", path, strerror(errno));
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0, r;
    do {
        if (n == cap) buf = tt_xrealloc(buf, cap = cap ? 2 * cap : 4096);
        r = fread(buf + n, 1, cap - n, fp);
        n += r;
    } while (r > 0);
    fclose(fp);
    *size = n;
    return buf;
}

/* ---- writer and reader together ---- */

START_TEST(test_dtype_names_and_sizes)
{
    static const char *names[] = {"F32", "F64", "I32", "I64"};
    static const size_t sizes[] = {4, 8, 4, 8};
    for (int d = TT_ST_F32; d <= TT_ST_I64; d++) {
        ck_assert_str_eq(tt_st_dtype_name((tt_st_dtype)d), names[d]);
        ck_assert_uint_eq(tt_st_dtype_size((tt_st_dtype)d), sizes[d]);
    }
    ck_assert_uint_eq(tt_st_dtype_size(TT_ST_REAL), sizeof(real));
}
END_TEST

#define SPECIAL_NAME "quote\" back\\slash\nnew line"
#define UTF8_NAME "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9d\x84\x9e"

START_TEST(test_round_trip_every_dtype)
{
    char path[4200], err[512] = "";
    const char *dir = tt_test_tmpdir();
    snprintf(path, sizeof path, "%s/model.safetensors", dir);

    const float w[6] = {1.5f, -2.0f, 0.1f, 3e-8f, -0.0f, 65504.0f};
    const double d[3] = {0.1, -1e300, 2.5e-310};
    const int32_t ids[5] = {0, -1, INT32_MAX, INT32_MIN, 42};
    const int64_t big[4] = {INT64_MAX, INT64_MIN, 1LL << 40, -7};
    const float scalar = 7.25f;
    const int64_t s_w[2] = {2, 3}, s_d[1] = {3}, s_ids[1] = {5}, s_big[2] = {2, 2};
    const int64_t s_empty[2] = {0, 3}, s_wide[2] = {1000000000000000LL, 0};
    const int64_t s_8d[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const int32_t one = 9;

    tt_st_writer wr;
    tt_st_writer_init(&wr);
    tt_st_writer_add(&wr, "w", TT_ST_F32, 2, s_w, w);
    tt_st_writer_add(&wr, "empty", TT_ST_F64, 2, s_empty, NULL);
    tt_st_writer_add(&wr, "d", TT_ST_F64, 1, s_d, d);
    tt_st_writer_add(&wr, SPECIAL_NAME, TT_ST_I32, 1, s_ids, ids);
    tt_st_writer_add(&wr, UTF8_NAME, TT_ST_I64, 2, s_big, big);
    tt_st_writer_add(&wr, "scalar", TT_ST_F32, 0, NULL, &scalar);
    tt_st_writer_add(&wr, "wide_empty", TT_ST_I32, 2, s_wide, NULL);
    tt_st_writer_add(&wr, "eight_dims", TT_ST_I32, 8, s_8d, &one);
    tt_st_writer_meta(&wr, "format", "pt");
    tt_st_writer_meta(&wr, "epoch", "1");
    tt_st_writer_meta(&wr, "k\"ey\\\n", "na\xc3\xafve \xe2\x9c\x93 \"q\" back\\slash\nline 2");
    tt_st_writer_meta(&wr, "epoch", "2"); /* replaces "1" */
    ck_assert_msg(tt_st_writer_save(&wr, path, err, sizeof err) == 0, "%s", err);
    tt_st_writer_free(&wr);
    ck_assert_int_eq(count_entries(dir), 1); /* no temporary left */

    tt_st_file f;
    ck_assert_msg(tt_st_load(&f, path, err, sizeof err) == 0, "%s", err);
    static const struct {
        const char *name;
        tt_st_dtype dt;
        int ndim;
        int64_t numel;
    } want[] = {{"w", TT_ST_F32, 2, 6},        {"empty", TT_ST_F64, 2, 0},
                {"d", TT_ST_F64, 1, 3},        {SPECIAL_NAME, TT_ST_I32, 1, 5},
                {UTF8_NAME, TT_ST_I64, 2, 4},  {"scalar", TT_ST_F32, 0, 1},
                {"wide_empty", TT_ST_I32, 2, 0}, {"eight_dims", TT_ST_I32, 8, 1}};
    const void *data[] = {w, NULL, d, ids, big, &scalar, NULL, &one};
    const int64_t *shapes[] = {s_w, s_empty, s_d, s_ids, s_big, NULL, s_wide, s_8d};
    ck_assert_int_eq(f.n, 8);
    for (int i = 0; i < f.n; i++) {
        const tt_st_entry *e = &f.entries[i]; /* offset order = insertion order here */
        ck_assert_str_eq(e->name, want[i].name);
        ck_assert_ptr_eq(tt_st_find(&f, want[i].name), e);
        ck_assert_int_eq(e->dtype, want[i].dt);
        ck_assert_int_eq(e->ndim, want[i].ndim);
        for (int k = 0; k < e->ndim; k++) ck_assert_int_eq(e->shape[k], shapes[i][k]);
        ck_assert_int_eq(e->numel, want[i].numel);
        ck_assert_uint_eq(e->nbytes, (size_t)want[i].numel * tt_st_dtype_size(want[i].dt));
        if (e->nbytes) ck_assert_msg(memcmp(e->data, data[i], e->nbytes) == 0, "%s", e->name);
    }
    ck_assert_ptr_null(tt_st_find(&f, "missing"));
    ck_assert_int_eq(f.n_meta, 3);
    ck_assert_str_eq(tt_st_meta(&f, "format"), "pt");
    ck_assert_str_eq(tt_st_meta(&f, "epoch"), "2");
    ck_assert_str_eq(tt_st_meta(&f, "k\"ey\\\n"),
                     "na\xc3\xafve \xe2\x9c\x93 \"q\" back\\slash\nline 2");
    ck_assert_ptr_null(tt_st_meta(&f, "missing"));
    tt_st_close(&f);
    tt_st_close(&f); /* closing twice is safe */
}
END_TEST

START_TEST(test_written_bytes)
{
    char path[4200], err[512] = "";
    const char *dir = tt_test_tmpdir();
    snprintf(path, sizeof path, "%s/a.safetensors", dir);
    const float a[3] = {1, 2, 3};
    const int64_t b[2] = {-1, 1LL << 50};
    const int64_t sa[1] = {3}, sb[2] = {2, 1}, swide[2] = {1000000000000000LL, 0};
    tt_st_writer wr;
    tt_st_writer_init(&wr);
    tt_st_writer_add(&wr, "a", TT_ST_F32, 1, sa, a);
    tt_st_writer_add(&wr, "b", TT_ST_I64, 2, sb, b);
    tt_st_writer_add(&wr, "z", TT_ST_F32, 2, swide, NULL);
    tt_st_writer_meta(&wr, "k", "v");
    ck_assert_msg(tt_st_writer_save(&wr, path, err, sizeof err) == 0, "%s", err);
    tt_st_writer_free(&wr);

    size_t size;
    uint8_t *buf = slurp(path, &size);
    ck_assert_uint_ge(size, 8);
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)buf[i] << (8 * i);
    ck_assert_uint_eq(size, 8 + n + 12 + 16);
    ck_assert_uint_eq((8 + n) % 8, 0);
    ck_assert_int_eq(buf[8], '{');
    char *hdr = (char *)buf + 8;
    size_t used = n;
    while (used > 0 && hdr[used - 1] == ' ') used--;
    ck_assert_uint_lt(n - used, 8); /* at most 7 bytes of space padding */
    ck_assert_int_eq(hdr[used - 1], '}');
    char *text = strndup(hdr, used);
    ck_assert_ptr_nonnull(strstr(text, "[1000000000000000,0]")); /* integers, not "1e+15" */
    free(text);

    cJSON *root = cJSON_ParseWithLength(hdr, n);
    ck_assert_ptr_nonnull(root);
    static const struct {
        const char *name, *dtype, *shape;
        int begin, end;
    } want[] = {
        {"a", "F32", "[3]", 0, 12}, {"b", "I64", "[2,1]", 12, 28}, {"z", "F32", "", 28, 28}};
    for (int i = 0; i < 3; i++) {
        cJSON *t = cJSON_GetObjectItemCaseSensitive(root, want[i].name);
        ck_assert_msg(cJSON_IsObject(t), "%s missing", want[i].name);
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(t, "dtype")->valuestring,
                         want[i].dtype);
        cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
        ck_assert_int_eq(cJSON_GetArraySize(off), 2);
        ck_assert_int_eq(cJSON_GetArrayItem(off, 0)->valueint, want[i].begin);
        ck_assert_int_eq(cJSON_GetArrayItem(off, 1)->valueint, want[i].end);
        if (*want[i].shape) {
            char *s = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(t, "shape"));
            ck_assert_str_eq(s, want[i].shape);
            cJSON_free(s);
        }
    }
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(meta, "k")->valuestring, "v");
    ck_assert_int_eq(cJSON_GetArraySize(root), 4);
    cJSON_Delete(root);
    ck_assert(memcmp(buf + 8 + n, a, 12) == 0);
    ck_assert(memcmp(buf + 8 + n + 12, b, 16) == 0);
    free(buf);
}
END_TEST

START_TEST(test_empty_writer)
{
    char path[4200], err[512] = "";
    const char *dir = tt_test_tmpdir();
    snprintf(path, sizeof path, "%s/empty.safetensors", dir);
    tt_st_writer wr;
    tt_st_writer_init(&wr);
    ck_assert_msg(tt_st_writer_save(&wr, path, err, sizeof err) == 0, "%s", err);
    tt_st_writer_free(&wr);
    size_t size;
    uint8_t *buf = slurp(path, &size);
    ck_assert_uint_eq(size, 16); /* "{}" padded to 8 bytes */
    ck_assert(memcmp(buf, "\x08\0\0\0\0\0\0\0{}      ", 16) == 0);
    free(buf);
    tt_st_file f;
    ck_assert_msg(tt_st_load(&f, path, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(f.n, 0);
    ck_assert_int_eq(f.n_meta, 0);
    tt_st_close(&f);
}
END_TEST

/* ---- saves that fail ---- */

static void save_one(const char *path, float value, char *err, size_t errlen, int want_rc)
{
    const int64_t shape[1] = {1};
    tt_st_writer wr;
    tt_st_writer_init(&wr);
    tt_st_writer_add(&wr, "v", TT_ST_F32, 1, shape, &value);
    int rc = tt_st_writer_save(&wr, path, err, errlen);
    tt_st_writer_free(&wr);
    ck_assert_msg(rc == want_rc, "save %s returned %d: %s", path, rc, err);
}

START_TEST(test_save_missing_directory)
{
    char path[4200], err[512] = "";
    const char *dir = tt_test_tmpdir();
    snprintf(path, sizeof path, "%s/no/such/dir/x.safetensors", dir);
    save_one(path, 1, err, sizeof err, -1);
    tt_st_test_check_message("missing dir", err, path, "cannot create",
                             "No such file or directory");
    ck_assert_int_eq(count_entries(dir), 0);
}
END_TEST

/* A leftover where older versions put their temporary file (PATH.tmp.<pid>, here a folder so
 * that nothing could write through it) blocks nothing: mkstemp picks a fresh name, and the
 * leftover, not the save's own, stays as it was. */
START_TEST(test_save_temporary_leftover)
{
    char path[4200], tmp[4300], err[512] = "";
    const char *dir = tt_test_tmpdir();
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    save_one(path, 1, err, sizeof err, 0);
    size_t size0, size1;
    uint8_t *before = slurp(path, &size0);

    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    ck_assert_int_eq(mkdir(tmp, 0700), 0);
    save_one(path, 2, err, sizeof err, 0);
    uint8_t *after = slurp(path, &size1);
    ck_assert(size0 == size1 && memcmp(before, after, size0 - 4) == 0);
    ck_assert(memcmp(before + size0 - 4, after + size1 - 4, 4) != 0);
    struct stat st;
    ck_assert(stat(tmp, &st) == 0 && S_ISDIR(st.st_mode)); /* not removed: it was not ours */
    ck_assert_int_eq(count_entries(dir), 2);
    ck_assert_int_eq(count_entries(tmp), 0);
    ck_assert_int_eq(rmdir(tmp), 0);
    free(after);
    free(before);
}
END_TEST

START_TEST(test_save_rename_fails)
{
    char path[4200], tmp[4300], inner[4300], err[512] = "";
    const char *dir = tt_test_tmpdir();
    snprintf(path, sizeof path, "%s/m.safetensors", dir); /* a non-empty directory */
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(inner, sizeof inner, "%s/keep", path);
    tt_st_test_spit(inner, "x", 1);
    save_one(path, 1, err, sizeof err, -1);
    tt_st_test_check_message("rename", err, path, "cannot rename", NULL);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    ck_assert_msg(access(tmp, F_OK) != 0 && errno == ENOENT, "%s was left behind", tmp);
    ck_assert_int_eq(count_entries(dir), 1);
    ck_assert_int_eq(count_entries(path), 1);
}
END_TEST

/* ---- programming errors abort ---- */

START_TEST(test_writer_duplicate_aborts)
{
    static tt_st_writer wr; /* static: the forked child aborts before it could free it */
    static const float x[1] = {0};
    const int64_t shape[1] = {1};
    tt_st_writer_init(&wr);
    tt_st_writer_add(&wr, "w", TT_ST_F32, 1, shape, x);
    tt_expect_abort("duplicate tensor name", "\"w\"", NULL);
    tt_st_writer_add(&wr, "w", TT_ST_F32, 1, shape, x);
}
END_TEST

START_TEST(test_writer_too_many_dims_aborts)
{
    static tt_st_writer wr;
    static const float x[1] = {0};
    const int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tt_st_writer_init(&wr);
    tt_expect_abort("\"w\" has 9 dims", "at most 8", NULL);
    tt_st_writer_add(&wr, "w", TT_ST_F32, 9, shape, x);
}
END_TEST

START_TEST(test_writer_reserved_name_aborts)
{
    static tt_st_writer wr;
    static const float x[1] = {0};
    tt_st_writer_init(&wr);
    tt_expect_abort("\"__metadata__\" is reserved", NULL, NULL);
    tt_st_writer_add(&wr, "__metadata__", TT_ST_F32, 0, NULL, x);
}
END_TEST

Suite *safetensors_suite(void)
{
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("write");
    tcase_add_checked_fixture(tc, tt_tmp_setup, tt_tmp_teardown);
    tcase_add_test(tc, test_dtype_names_and_sizes);
    tcase_add_test(tc, test_round_trip_every_dtype);
    tcase_add_test(tc, test_written_bytes);
    tcase_add_test(tc, test_empty_writer);
    tcase_add_test(tc, test_save_missing_directory);
    tcase_add_test(tc, test_save_temporary_leftover);
    tcase_add_test(tc, test_save_rename_fails);
    tcase_add_test_raise_signal(tc, test_writer_duplicate_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_writer_too_many_dims_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_writer_reserved_name_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}
