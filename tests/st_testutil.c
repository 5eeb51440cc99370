/* st_testutil.c: helpers shared by the safetensors suites (see st_testutil.h). */
#include "st_testutil.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set by the fixture in the parent process; forked tests inherit it. */
static char root_dir[1024];

void tt_st_test_setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(root_dir, sizeof root_dir, "%s/tt_st_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(root_dir)) root_dir[0] = 0;
}

void tt_st_test_teardown(void)
{
    if (root_dir[0]) tt_st_test_rm_tree(root_dir);
}

void tt_st_test_mkdir(char *dir, size_t len)
{
    ck_assert_msg(root_dir[0], "no temporary directory");
    snprintf(dir, len, "%s/t_XXXXXX", root_dir);
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
}

void tt_st_test_rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
        tt_st_test_rm_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

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
