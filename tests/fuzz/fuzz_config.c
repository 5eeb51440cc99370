/* fuzz_config.c: libFuzzer harness for the config loader (src/train/config): the input is the
 * config file's text, then NUL-separated --set strings ("JSON\0model.d_model=8\0..."), given to
 * tt_config_load exactly as ./train gives them. The data files a config names by default
 * (train.txt, valid.txt) exist beside it, so that a config can get all the way through
 * validation. A config that loads must also survive its own round trip: the resolved JSON read
 * back (tt_config_from_text, the checkpoint's path) loads and resolves to the same text. */
#include "fuzz_util.h"

#include "train/config/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SETS = 8 };

static void round_trip(const tt_config *c)
{
    char err[TT_CONFIG_ERR];
    char *json = tt_config_to_json(c);
    tt_config back;
    if (tt_config_from_text(&back, json, "resolved", NULL, 0, err, sizeof err)) {
        fprintf(stderr, "fuzz_config: the resolved config does not load again: %s\n%s\n", err,
                json);
        abort();
    }
    char *again = tt_config_to_json(&back);
    if (strcmp(json, again)) {
        fprintf(stderr, "fuzz_config: the round trip changed the config:\n%s\n%s\n", json, again);
        abort();
    }
    free(again);
    free(json);
    tt_config_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        static const char line[] = "time flies like an arrow\tN V P D N\n";
        tt_fuzz_write("train.txt", line, sizeof line - 1);
        tt_fuzz_write("valid.txt", line, sizeof line - 1);
        ready = 1;
    }
    char *parts[1 + MAX_SETS];
    int n = tt_fuzz_split(data, size, parts, 1 + MAX_SETS);
    const char *path = tt_fuzz_write("config.json", parts[0], strlen(parts[0]));
    tt_config c;
    char err[TT_CONFIG_ERR];
    err[0] = '\0';
    int rc = tt_config_load(&c, path, (const char *const *)parts + 1, n - 1, err, sizeof err);
    tt_fuzz_note("tt_config_load", rc ? err : "");
    if (rc == 0) {
        round_trip(&c);
        tt_config_free(&c);
    } else if (!err[0]) {
        fprintf(stderr, "fuzz_config: -1 without a message\n");
        abort();
    }
    tt_fuzz_parts_free(parts, n);
    return 0;
}
