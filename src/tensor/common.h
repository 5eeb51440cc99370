/* common.h: invariants, fatal errors and checked allocation shared by every layer.
 *
 * TT_ASSERT and TT_ASSERT_MSG are always on (every build, release included): a broken invariant
 * inside the runtime prints file:line and the message, then aborts. They are for programmer
 * errors only; mistakes in user input (config, data, checkpoints) return a status instead. */
#ifndef TT_COMMON_H
#define TT_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TT_NORETURN __attribute__((noreturn))
#define TT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TT_NORETURN
#define TT_PRINTF(a, b)
#endif

/* Keeps "file:line: message" in tt_fatal_message, calls tt_fatal_hook if one is set (tests use it
 * to inspect the message), prints "tt: FATAL file:line: message" to stderr, then aborts. */
TT_NORETURN void tt_fatal(const char *file, int line, const char *fmt, ...) TT_PRINTF(3, 4);

/* The last fatal message, for tests that check what an abort said. */
extern char tt_fatal_message[1024];
extern void (*tt_fatal_hook)(const char *message);

#define TT_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) tt_fatal(__FILE__, __LINE__, "assertion failed: %s", #cond);                  \
    } while (0)

#define TT_ASSERT_MSG(cond, ...)                                                                   \
    do {                                                                                           \
        if (!(cond)) tt_fatal(__FILE__, __LINE__, __VA_ARGS__);                                    \
    } while (0)

/* malloc that aborts with the size asked for; never returns NULL. */
void *tt_xmalloc(size_t bytes);
void *tt_xcalloc(size_t count, size_t size);
void *tt_xrealloc(void *p, size_t bytes);
char *tt_xstrdup(const char *s);

/* The number of bytes of s[0..n) before the first byte that is not well-formed UTF-8 (overlong
 * forms, UTF-16 surrogates and code points past U+10FFFF are not), n when all of it is. */
size_t tt_utf8_valid_prefix(const char *s, size_t n);
/* Calls put(f, s, n) for each well-formed UTF-8 run of s, writing '?' for each bad byte (the
 * JSON and XML writers' escaping goes through it). */
void tt_utf8_runs(FILE *f, const char *s, void (*put)(FILE *, const char *, size_t));

/* Text from a config, a data file or the command line on its way to a terminal. The number of
 * bytes of the character at the start of s[0..n) when a terminal shows it as text: printable
 * ASCII, or a well-formed UTF-8 sequence other than the C1 controls (U+0080..U+009F), the line
 * and paragraph separators and the bidirectional controls (U+2028..U+202E, U+2066..U+2069);
 * 0 for everything else (C0 controls, DEL, bytes that are not well-formed UTF-8, n == 0). */
size_t tt_term_printable(const char *s, size_t n);
/* The number of bytes of s[0..n) before the first character that tt_term_printable refuses. */
size_t tt_term_printable_prefix(const char *s, size_t n);
/* Writes s to f with every byte of a character that tt_term_printable refuses escaped as \xHH,
 * so that no escape sequence reaches the terminal (ESC [ 2 J, a window title...); the bytes in
 * keep (e.g. "\n" for a message of several lines, "" for one) are written as they are. */
void tt_term_puts(FILE *f, const char *s, const char *keep);

/* Atomic writes (docs/design.md section 8): tt_atomic_open creates PATH.tmp.XXXXXX by mkstemp
 * (a fresh name, so neither a leftover of a killed process nor another writer can block or be
 * written through; mode 0666 less the umask, close-on-exec); tt_atomic_close checks every write, fflush,
 * fsync, close, renames over PATH, and on any failure removes the temporary file and leaves an
 * existing PATH as it was. ok false: an earlier step failed (err already filled). 0 or -1 with
 * "PATH: what failed: strerror" in err. */
typedef struct tt_atomic_file {
    FILE *f;
    char *tmp;        /* owned */
    const char *path; /* the caller's */
} tt_atomic_file;
int tt_atomic_open(tt_atomic_file *o, const char *path, char *err, size_t errlen);
int tt_atomic_close(tt_atomic_file *o, bool ok, char *err, size_t errlen);
/* A function tt_atomic_close calls with PATH once the file is written, before it is renamed
 * into place (NULL: none), so that the caller that owns a folder can note the files written
 * there (the run folder's record); its -1 (err filled) makes tt_atomic_close return -1 and
 * leaves PATH as it was. */
typedef int (*tt_atomic_hook)(const char *path, char *err, size_t errlen);
void tt_atomic_set_hook(tt_atomic_hook hook);

/* The median of v[0..n) (the mean of the middle two when n is even; 0 when n is 0); sorts v. */
double tt_median(double *v, int n);

/* User-input errors (mechanism 2 of STYLE.md): format the message into err (when err is not NULL
 * and errlen > 0) and return -1, so a caller writes `return tt_errorf(err, errlen, ...)`. */
int tt_errorf(char *err, size_t errlen, const char *fmt, ...) TT_PRINTF(3, 4);

/* The whole of f (named path in messages), NUL-terminated and malloc'ed into *buf (*len
 * bytes), reading at most max + 1 bytes, so that a device (/dev/zero, /dev/urandom) or a huge
 * file ends at once: 0, or -1 with err: "PATH: more than MAX bytes; WHAT", "PATH:LINE: a NUL
 * byte at offset N; WHAT" (what says what the file must be), "PATH: cannot read: ...". A UTF-8
 * byte order mark (EF BB BF) at the start is dropped: *buf holds the text after it (a NUL's
 * offset in a message counts the file's bytes, the mark's included). */
int tt_read_bounded(FILE *f, const char *path, size_t max, const char *what, char **buf,
                    size_t *len, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
