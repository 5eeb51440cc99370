/* fuzz_checkpoint.c: libFuzzer harness for the checkpoint readers. Each input is a file given
 * to both: tt_checkpoint_load (--resume) into one small run built at start-up (the run of
 * FIXED_CONFIG below, so that a seed checkpoint of that run gets through every check), and
 * tt_use_open (./infer), which rebuilds a whole run from the checkpoint alone.
 *
 * Memory: a fuzzed checkpoint's config may ask for a huge model. Until the config-level memory
 * check is in, the harness estimates the bytes of the model its config asks for (parameters,
 * gradients, two moments, the step's activations) and skips tt_use_open above 256 MiB; make
 * fuzz also runs with -rss_limit_mb. TT_FUZZ_SEEDS=DIR instead trains that run and a language
 * model variant with ./train's own main into DIR and exits (make fuzz-seeds keeps their
 * checkpoints as seeds). */
#include "fuzz_util.h"

#include "tensor/safetensors.h"
#include "train/cli.h"
#include "train/run/run.h"
#include "train/use/use.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A model of a few KB: d_model 8, one layer, a handful of words. */
static const char FIXED_CONFIG[] =
    "{\"seed\": 1, \"threads\": 1,\n"
    " \"data\": {\"task\": \"tag\", \"train\": \"tag.txt\", \"valid\": \"tag.txt\", \"seq_len\": 6,\n"
    "          \"probes\": [\"time flies like an arrow\"], \"ambiguous\": [\"flies\"]},\n"
    " \"model\": {\"d_model\": 8, \"n_heads\": 2, \"n_layers\": 1, \"d_ff\": 16},\n"
    " \"train\": {\"epochs\": 1, \"batch_size\": 2},\n"
    " \"output\": {\"checkpoint_every\": 1}}\n";
static const char TAG_DATA[] = "time flies like an arrow\tN V P D N\n"
                               "fruit flies like a banana\tN N V D N\n"
                               "the crane flies\tD N V\n"
                               "an arrow flies\tD N V\n";
static const char LM_DATA[] = "time flies like an arrow\n"
                              "fruit flies like a banana\n"
                              "서연은 시장에 간다\n";
static const char *const LM_SETS[] = {
    "data.task=lm", "data.train=lm.txt", "data.valid=lm.txt", "data.ambiguous=[]",
    "train.optimizer=sgd", "model.positional=learned", "model.norm=pre",
    "model.activation=gelu"};
static const char *const USE_SETS[] = {"threads=1"}; /* as ./infer passes them */

static tt_run fixed;

static void fail(const char *what, const char *err)
{
    fprintf(stderr, "fuzz_checkpoint: %s: %s\n", what, err);
    abort();
}

/* ./train CONFIG --set output.dir=DIR/name [sets...] */
static void train_seed(const char *config, const char *dir, const char *name,
                       const char *const *sets, int n_sets)
{
    char out[1100];
    snprintf(out, sizeof out, "output.dir=%s/%s", dir, name);
    char *argv[32] = {"train", (char *)config, "--set", out};
    int argc = 4;
    for (int i = 0; i < n_sets; i++) argv[argc++] = "--set", argv[argc++] = (char *)sets[i];
    if (tt_train_main(argc, argv)) fail("seed training", name);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    tt_fuzz_write("tag.txt", TAG_DATA, sizeof TAG_DATA - 1);
    tt_fuzz_write("lm.txt", LM_DATA, sizeof LM_DATA - 1);
    char config[1024];
    snprintf(config, sizeof config, "%s", tt_fuzz_write("fixed.json", FIXED_CONFIG,
                                                        sizeof FIXED_CONFIG - 1));
    const char *seeds = getenv("TT_FUZZ_SEEDS");
    if (seeds) {
        train_seed(config, seeds, "tag", NULL, 0);
        train_seed(config, seeds, "lm", LM_SETS, (int)(sizeof LM_SETS / sizeof *LM_SETS));
        exit(0);
    }
    char err[2048];
    if (tt_config_load(&fixed.cfg, config, NULL, 0, err, sizeof err) ||
        tt_corpus_load(&fixed.data, &fixed.cfg, err, sizeof err) ||
        tt_run_init(&fixed, err, sizeof err))
        fail("the fixed run", err);
    return 0;
}

/* The bytes the model of a checkpoint's config would take, roughly (an upper estimate: every
 * metadata byte counted as a word of the vocabulary); 0 when its config does not load. */
static double model_bytes(const uint8_t *data, size_t size)
{
    tt_st_file f;
    char err[2048];
    if (tt_st_parse(&f, data, size, "input", err, sizeof err)) return 0;
    const char *text = tt_st_meta(&f, "config");
    tt_config c;
    double bytes = 0;
    if (text && tt_config_from_text(&c, text, "input", USE_SETS, 1, err, sizeof err) == 0) {
        double V = (double)size, d = c.model.d_model, f_ = c.model.d_ff, L = c.model.n_layers,
               H = c.model.n_heads, T = c.data.seq_len, N = (double)c.train.batch_size * T;
        double params = V * d + c.model.max_len * d + L * (4 * d * d + 2 * d * f_ + 10 * d + f_) +
                        2 * d + V * (d + 1);
        bytes = 16 * params + 4 * 1.5 * (N * (L * (10 * d + 3 * f_ + H * T) + 6 * d + V));
        tt_config_free(&c);
    }
    tt_st_close(&f);
    return bytes;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = tt_fuzz_write("input.safetensors", data, size);
    char err[2048] = "";
    int rc = tt_checkpoint_load(&fixed, path, err, sizeof err);
    tt_fuzz_note("tt_checkpoint_load", rc ? err : "");
    if (rc && !err[0]) fail("tt_checkpoint_load", "-1 without a message");
    if (model_bytes(data, size) > 256.0 * 1024 * 1024) {
        tt_fuzz_note("tt_use_open", "skipped: the model would take more than 256 MiB");
        return 0;
    }
    tt_run r;
    err[0] = '\0';
    rc = tt_use_open(&r, path, USE_SETS, 1, err, sizeof err);
    tt_fuzz_note("tt_use_open", rc ? err : "");
    if (rc == 0) tt_run_free(&r);
    else if (!err[0]) fail("tt_use_open", "-1 without a message");
    return 0;
}
