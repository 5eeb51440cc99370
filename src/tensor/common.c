/* common.c: fatal errors, checked allocation, user-input errors, UTF-8 validation, text made
 * safe for a terminal, atomic writes through temporary files that mkstemp names (so no
 * leftover can ever collide), and bounded reads of a whole text file (a config, a corpus). */
#include "tensor/common.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

char tt_fatal_message[1024];
void (*tt_fatal_hook)(const char *message);

void tt_fatal(const char *file, int line, const char *fmt, ...)
{
    int len = snprintf(tt_fatal_message, sizeof tt_fatal_message, "%s:%d: ", file, line);
    if (len < 0) len = 0;
    if ((size_t)len < sizeof tt_fatal_message) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(tt_fatal_message + len, sizeof tt_fatal_message - (size_t)len, fmt, ap);
        va_end(ap);
    }
    if (tt_fatal_hook) tt_fatal_hook(tt_fatal_message);
    fprintf(stderr, "tt: FATAL %s\n", tt_fatal_message);
    fflush(stderr);
    abort();
}

void *tt_xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    TT_ASSERT_MSG(p, "out of memory: malloc of %zu bytes failed", bytes);
    return p;
}

void *tt_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    TT_ASSERT_MSG(p, "out of memory: calloc of %zu x %zu bytes failed", count, size);
    return p;
}

void *tt_xrealloc(void *p, size_t bytes)
{
    void *q = realloc(p, bytes ? bytes : 1);
    TT_ASSERT_MSG(q, "out of memory: realloc to %zu bytes failed", bytes);
    return q;
}

char *tt_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(tt_xmalloc(n), s, n);
}

int tt_errorf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

size_t tt_utf8_valid_prefix(const char *str, size_t n)
{
    const uint8_t *s = (const uint8_t *)str;
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) { i++; continue; }
        if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07, min = 0x10000;
        else return i;
        if (i + len > n) return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        /* overlong forms, UTF-16 surrogates and code points past U+10FFFF are invalid */
        if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return i;
        i += len;
    }
    return n;
}

size_t tt_term_printable(const char *str, size_t n)
{
    const uint8_t *s = (const uint8_t *)str;
    if (n == 0) return 0;
    if (s[0] < 0x80) return s[0] >= 0x20 && s[0] < 0x7F;
    size_t len = (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : 4;
    if (tt_utf8_valid_prefix(str, n < len ? n : len) < len) return 0;
    uint32_t cp = len == 2 ? (s[0] & 0x1Fu) << 6 | (s[1] & 0x3Fu)
                  : len == 3 ? (s[0] & 0x0Fu) << 12 | (s[1] & 0x3Fu) << 6 | (s[2] & 0x3Fu)
                             : 0x10000; /* past every code point refused below */
    if (cp <= 0x9F || (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
        return 0;
    return len;
}

size_t tt_term_printable_prefix(const char *s, size_t n)
{
    size_t i = 0, k;
    while (i < n && (k = tt_term_printable(s + i, n - i))) i += k;
    return i;
}

void tt_term_puts(FILE *f, const char *s, const char *keep)
{
    size_t n = strlen(s);
    while (n) {
        size_t k = tt_term_printable(s, n);
        if (k) {
            fwrite(s, 1, k, f);
        } else if (strchr(keep, *s)) {
            fputc(*s, f);
            k = 1;
        } else {
            /* the whole character when it is well-formed (a C1 control: both its bytes) */
            size_t ok = tt_utf8_valid_prefix(s, n < 4 ? n : 4);
            uint8_t c = (uint8_t)*s;
            k = c >= 0xC0 && ok >= 2 ? (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4 : 1;
            for (size_t i = 0; i < k; i++)
                fprintf(f, "\\x%02x", (uint8_t)s[i]);
        }
        s += k, n -= k;
    }
}

int tt_atomic_open(tt_atomic_file *o, const char *path, char *err, size_t errlen)
{
    size_t n = strlen(path) + sizeof ".tmp.XXXXXX";
    *o = (tt_atomic_file){.tmp = tt_xmalloc(n), .path = path};
    snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
    /* mkstemp makes the file 0600; a checkpoint or report should get what open(..., 0666)
     * gave it before, so 0666 less the umask (read by setting it and setting it back) */
    mode_t mask = umask(0);
    umask(mask);
    int fd = mkstemp(o->tmp);
    if (fd >= 0 && (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 || fchmod(fd, 0666 & ~mask) != 0 ||
                    !(o->f = fdopen(fd, "w")))) {
        int e = errno;
        close(fd);
        errno = e;
    }
    if (!o->f) {
        int e = errno;
        if (fd >= 0) unlink(o->tmp);
        tt_errorf(err, errlen, "%s: cannot create %s: %s", path, o->tmp, strerror(e));
        free(o->tmp);
        *o = (tt_atomic_file){0};
        return -1;
    }
    return 0;
}

static tt_atomic_hook atomic_hook;

void tt_atomic_set_hook(tt_atomic_hook hook)
{
    atomic_hook = hook;
}

int tt_atomic_close(tt_atomic_file *o, bool ok, char *err, size_t errlen)
{
    const char *failed = NULL;
    if (ok && (ferror(o->f) || fflush(o->f) != 0 || fsync(fileno(o->f)) != 0))
        failed = "cannot write";
    if (fclose(o->f) != 0 && ok && !failed) failed = "cannot close";
    /* the hook notes the name before the file appears under it: a process killed between
     * the two leaves a noted name without a file, never a file its owner does not know */
    bool hook_failed = ok && !failed && atomic_hook && atomic_hook(o->path, err, errlen) != 0;
    if (ok && !failed && !hook_failed && rename(o->tmp, o->path) != 0) failed = "cannot rename";
    if (ok && failed)
        tt_errorf(err, errlen, "%s: %s %s%s: %s", o->path, failed, o->tmp,
                  strcmp(failed, "cannot rename") == 0 ? " over it" : "",
                  strerror(errno ? errno : EIO));
    if (!ok || failed || hook_failed) unlink(o->tmp);
    free(o->tmp);
    *o = (tt_atomic_file){0};
    return ok && !failed && !hook_failed ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tt_median(double *v, int n)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int tt_read_bounded(FILE *f, const char *path, size_t max, const char *what, char **buf,
                    size_t *len, char *err, size_t errlen)
{
    size_t cap = max + 2 < 1 << 16 ? max + 2 : 1 << 16, n = 0, got;
    char *b = tt_xmalloc(cap);
    int rc = 0;
    errno = 0;
    while (!rc) {
        size_t want = cap - 1 - n < max + 1 - n ? cap - 1 - n : max + 1 - n;
        if ((got = fread(b + n, 1, want, f)) == 0) break;
        const char *nul = memchr(b + n, '\0', got);
        n += got;
        if (nul) {
            int lineno = 1;
            for (const char *p = b; p < nul; p++) lineno += *p == '\n';
            rc = tt_errorf(err, errlen, "%s:%d: a NUL byte at offset %zu; %s", path, lineno,
                           (size_t)(nul - b), what);
        } else if (n > max) {
            rc = tt_errorf(err, errlen, "%s: more than %zu bytes; %s", path, max, what);
        } else if (n == cap - 1) {
            cap = cap > (max + 2) / 2 ? max + 2 : 2 * cap;
            b = tt_xrealloc(b, cap);
        }
    }
    if (!rc && ferror(f))
        rc = tt_errorf(err, errlen, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
    if (rc) {
        free(b);
        return -1;
    }
    /* a UTF-8 byte order mark (what some editors put first) is no part of the text: it would
     * be in the first word of a data file and before a config's '{' */
    if (n >= 3 && memcmp(b, "\xEF\xBB\xBF", 3) == 0) memmove(b, b + 3, n -= 3);
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

void tt_utf8_runs(FILE *f, const char *s, void (*put)(FILE *, const char *, size_t))
{
    size_t n = strlen(s);
    while (n) {
        size_t ok = tt_utf8_valid_prefix(s, n);
        put(f, s, ok);
        if (ok == n) break;
        fputc('?', f);
        s += ok + 1, n -= ok + 1;
    }
}
