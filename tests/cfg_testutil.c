/* cfg_testutil.c: helpers shared by the config suites (see cfg_testutil.h). */
#define _XOPEN_SOURCE 700 /* realpath */

#include "cfg_testutil.h"

#include "st_testutil.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tt_cfg_write_text(const char *path, const char *text)
{
    tt_st_test_spit(path, text, strlen(text));
}

void tt_cfg_write_json(const char *path, const char *json)
{
    char *s = tt_xstrdup(json);
    for (char *p = s; *p; p++)
        if (*p == '\'') *p = '"';
    tt_cfg_write_text(path, s);
    free(s);
}

void tt_cfg_fx_init(tt_cfg_fx *f)
{
    char p[1200];
    tt_test_mkdir(f->dir, sizeof f->dir);
    snprintf(f->path, sizeof f->path, "%s/c.json", f->dir);
    snprintf(p, sizeof p, "%s/train.txt", f->dir);
    tt_cfg_write_text(p, "the cat sat\tDT NN VBD\n");
    snprintf(p, sizeof p, "%s/valid.txt", f->dir);
    tt_cfg_write_text(p, "a dog ran\tDT NN VBD\n");
    f->err[0] = 0;
}

const char *tt_cfg_real_in(const tt_cfg_fx *f, const char *name, char *out)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", f->dir, name);
    ck_assert_msg(realpath(p, out) != NULL, "realpath %s: %s", p, strerror(errno));
    return out;
}

int tt_cfg_load(tt_cfg_fx *f, const char *json, const char *const *sets, int n_sets, tt_config *c)
{
    tt_cfg_write_json(f->path, json);
    return tt_config_load(c, f->path, sets, n_sets, f->err, sizeof f->err);
}

void tt_cfg_expect_ok(int rc, const tt_cfg_fx *f)
{
    ck_assert_msg(rc == 0, "load failed: %s", f->err);
}

void tt_cfg_expect_zeroed(const tt_config *c)
{
    static const tt_config zero;
    ck_assert_msg(memcmp(c, &zero, sizeof zero) == 0, "the config is not zeroed after an error");
}

void tt_cfg_expect_error(const char *json, const char *const *sets, int n_sets, const char *src,
                         const char *jpath, const char *want)
{
    tt_cfg_fx f;
    tt_config c;
    char needle[256];
    tt_cfg_fx_init(&f);
    memset(&c, 0x5a, sizeof c);
    int rc = tt_cfg_load(&f, json, sets, n_sets, &c);
    ck_assert_msg(rc == -1, "%s: loaded without an error", json);
    tt_cfg_expect_zeroed(&c);
    snprintf(needle, sizeof needle, ": %s", jpath);
    tt_st_test_check_message(json, f.err, src ? src : f.path, needle, want);
}
