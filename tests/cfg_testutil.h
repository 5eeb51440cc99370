/* cfg_testutil.h: what the config suites (test_config.c, test_config_errors.c) share: a fresh
 * folder inside the test's temporary one (testutil.h) with tiny train.txt and valid.txt files,
 * writing a config there and loading it, and the checks on the outcome. JSON in these suites is
 * written with single quotes, turned into double quotes on the way to the file, so that each case
 * reads like the file it stands for. */
#ifndef TT_CFG_TESTUTIL_H
#define TT_CFG_TESTUTIL_H

#include "train/config/config.h"

/* The smallest valid data section. */
#define TT_CFG_MIN "'data': {'task': 'tag', 'seq_len': 16}"

/* One test's directory: DIR/train.txt, DIR/valid.txt, the config at DIR/c.json. */
typedef struct tt_cfg_fx {
    char dir[1024], path[1100], err[TT_CONFIG_ERR];
} tt_cfg_fx;

/* Writes text to path; fails the test on any error. */
void tt_cfg_write_text(const char *path, const char *text);
/* Writes json to path with every ' turned into ". */
void tt_cfg_write_json(const char *path, const char *json);
/* Makes a fresh directory (tt_test_mkdir) with its train.txt and valid.txt. */
void tt_cfg_fx_init(tt_cfg_fx *f);
/* realpath of DIR/name (which must exist), into out (PATH_MAX bytes). */
const char *tt_cfg_real_in(const tt_cfg_fx *f, const char *name, char *out);
/* Writes json to the fixture's c.json and loads it with the overrides. */
int tt_cfg_load(tt_cfg_fx *f, const char *json, const char *const *sets, int n_sets, tt_config *c);
void tt_cfg_expect_ok(int rc, const tt_cfg_fx *f);
/* After a failed load the config is freed and zeroed. */
void tt_cfg_expect_zeroed(const tt_config *c);
/* Loads json (with the overrides), which must fail with a message that starts with "src:" (the
 * config's path when src is NULL) and names ": jpath" and want. */
void tt_cfg_expect_error(const char *json, const char *const *sets, int n_sets, const char *src,
                         const char *jpath, const char *want);

#endif
