/* common.c: fatal errors and checked allocation. */
#include "tensor/common.h"

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
