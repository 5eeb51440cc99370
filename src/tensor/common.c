/* common.c: fatal errors, checked allocation, user-input errors, UTF-8 validation and atomic
 * writes through temporary files that mkstemp names (so no leftover can ever collide). */
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
