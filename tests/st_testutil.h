/* st_testutil.h: what the safetensors suites (test_safetensors.c, test_safetensors_read.c)
 * share: a temporary directory per test case, writing raw bytes to a file, and the check that an
 * error message names its source and the problem. */
#ifndef TT_ST_TESTUTIL_H
#define TT_ST_TESTUTIL_H

#include <stddef.h>

/* The unchecked fixture of a tcase: makes (and removes, with everything in it) one directory
 * under $TMPDIR (or /tmp). It runs in the parent process, so a test that fails half-way still
 * leaves nothing behind. */
void tt_st_test_setup(void);
void tt_st_test_teardown(void);
/* A fresh directory inside the fixture's, its path written into dir (len bytes); it lives until
 * the fixture's teardown unless removed first. Fails the test if there is no fixture directory. */
void tt_st_test_mkdir(char *dir, size_t len);
/* Removes path, a file or a directory with everything in it; errors are ignored. */
void tt_st_test_rm_tree(const char *path);
/* Writes size bytes to path (created or truncated); fails the test on any error. */
void tt_st_test_spit(const char *path, const void *bytes, size_t size);
/* Fails the test unless err starts with "what:" and contains a and b (b may be NULL). */
void tt_st_test_check_message(const char *label, const char *err, const char *what, const char *a,
                              const char *b);

#endif
