/* st_testutil.c: helpers shared by the safetensors suites (see st_testutil.h). */
#include "st_testutil.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

void tt_st_test_spit(const char *path, const void *bytes, size_t size)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_msg(fp != NULL, "create %s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(bytes, 1, size, fp), size);
    ck_assert_int_eq(fclose(fp), 0);
}

void tt_st_test_check_message(const char *label, const char *err, const char *what, const char *a,
                              const char *b)
{
    ck_assert_msg(strncmp(err, what, strlen(what)) == 0 && err[strlen(what)] == ':',
                  "%s: message \"%s\" does not start with \"%s:\"", label, err, what);
    ck_assert_msg(strstr(err, a) != NULL, "%s: message \"%s\" lacks \"%s\"", label, err, a);
    ck_assert_msg(!b || strstr(err, b) != NULL, "%s: message \"%s\" lacks \"%s\"", label, err, b);
}
