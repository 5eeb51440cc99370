/* fuzz_util.h: what the libFuzzer harnesses (tests/fuzz/fuzz_*.c, built by `make fuzz`) share.
 * The loaders take paths, so each input is written to a file in one private temporary folder
 * (made on first use, removed at exit); the cost is a write and an open per execution, small
 * next to the parsing. An input that carries several parts (a config and its --set strings,
 * a training and a validation file) separates them with NUL bytes. */
#ifndef TT_FUZZ_UTIL_H
#define TT_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* The private folder (mkdtemp under $TMPDIR or /tmp), made once. */
const char *tt_fuzz_dir(void);
/* dir/name, in one static buffer that the next call overwrites. */
const char *tt_fuzz_path(const char *name);
/* Writes bytes[0..n) to dir/name (truncating) and returns its path (the same static buffer); aborts
 * when the write fails: that is the machine, not a finding. */
const char *tt_fuzz_write(const char *name, const void *bytes, size_t n);

/* Up to max parts of data[0..size) split at NUL bytes, each a malloc'ed NUL-terminated copy in
 * parts[] (free them with tt_fuzz_parts_free); returns how many (at least 1). */
int tt_fuzz_split(const uint8_t *data, size_t size, char **parts, int max);
void tt_fuzz_parts_free(char **parts, int n);

/* With TT_FUZZ_VERBOSE set, prints what a loader said of the input ("" when it accepted it):
 * to see how far a seed or a reproducer gets. */
void tt_fuzz_note(const char *who, const char *err);

#endif
