/* st_testutil.h: what the safetensors suites (test_safetensors.c, test_safetensors_read.c)
 * share: writing raw bytes to a file, and the check that an error message names its source and
 * the problem. Their files live in the test's temporary folder (testutil.h). */
#ifndef TT_ST_TESTUTIL_H
#define TT_ST_TESTUTIL_H

#include <stddef.h>

/* Writes size bytes to path (created or truncated); fails the test on any error. */
void tt_st_test_spit(const char *path, const void *bytes, size_t size);
/* Fails the test unless err starts with "what:" and contains a and b (b may be NULL). */
void tt_st_test_check_message(const char *label, const char *err, const char *what, const char *a,
                              const char *b);

#endif
