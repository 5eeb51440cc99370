/* fuzz_util.c: the harnesses' temporary folder and input splitting (fuzz_util.h). The folder is
 * removed at exit with everything in it (a walk, depth first, that never follows a link). */
#define _XOPEN_SOURCE 700
#include "fuzz_util.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[512];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_dir(void)
{
    nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

const char *tt_fuzz_dir(void)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/tt_fuzz.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(remove_dir);
    }
    return dir;
}

const char *tt_fuzz_path(const char *name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", tt_fuzz_dir(), name);
    return path;
}

const char *tt_fuzz_write(const char *name, const void *bytes, size_t n)
{
    const char *path = tt_fuzz_path(name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, n, f) != n || fclose(f)) {
        perror("fuzz: writing the input file");
        abort();
    }
    return path;
}

int tt_fuzz_split(const uint8_t *data, size_t size, char **parts, int max)
{
    int n = 0;
    size_t at = 0;
    while (n < max) {
        const uint8_t *nul = n + 1 < max && at < size ? memchr(data + at, 0, size - at) : NULL;
        size_t len = nul ? (size_t)(nul - (data + at)) : size - at;
        parts[n] = malloc(len + 1);
        if (!parts[n]) abort();
        if (len) memcpy(parts[n], data + at, len);
        parts[n++][len] = '\0';
        if (!nul) break;
        at += len + 1;
    }
    return n;
}

void tt_fuzz_parts_free(char **parts, int n)
{
    for (int i = 0; i < n; i++)
        free(parts[i]);
}

void tt_fuzz_note(const char *who, const char *err)
{
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("TT_FUZZ_VERBOSE") != NULL;
    if (verbose) fprintf(stderr, "%s: %s\n", who, err[0] ? err : "accepted");
}
