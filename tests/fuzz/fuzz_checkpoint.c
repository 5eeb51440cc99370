/* fuzz_checkpoint.c: libFuzzer harness for the checkpoint readers. Each input is a file given
 * to both: tt_checkpoint_load (--resume) into one small run built at start-up (the run of
 * FIXED_CONFIG below, so that a seed checkpoint of that run gets through every check), and
 * tt_use_open (./infer), which rebuilds a whole run from the checkpoint alone.
 *
 * Memory: a fuzzed checkpoint's config may ask for a huge model. tt_use_open checks the memory
 * a run needs against what the process may use (budget.c) before it allocates; the harness
 * makes that 256 MiB, well under make fuzz's -rss_limit_mb, with a fake /proc/meminfo
 * (TT_MEM_ROOT), so the project's own check is what keeps a fuzzed model small, and is fuzzed
 * with the rest. TT_FUZZ_SEEDS=DIR instead trains that run and a language model variant with
 * ./train's own main into DIR and exits (make fuzz-seeds keeps their checkpoints as seeds). */
#include "fuzz_util.h"

#include "train/cli.h"
#include "train/run/run.h"
#include "train/use/use.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A model of a few KB: d_model 8, one layer, a handful of words. */
static const char FIXED_CONFIG[] =
    "{\"seed\": 1, \"threads\": 1,\n"
    " \"data\": {\"task\": \"tag\", \"train\": \"tag.txt\", \"valid\": \"tag.txt\",\n"
    "          \"seq_len\": 6,\n"
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
static const char *const LM_SETS[] = {"data.task=lm",        "data.train=lm.txt",
                                      "data.valid=lm.txt",   "data.ambiguous=[]",
                                      "train.optimizer=sgd", "model.positional=learned",
                                      "model.norm=pre",      "model.activation=gelu"};
static const char *const USE_SETS[] = {"threads=1"}; /* as ./infer passes them */

static tt_run fixed;

static void fail(const char *what, const char *err)
{
    fprintf(stderr, "fuzz_checkpoint: %s: %s\n", what, err);
    abort();
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) fail("writing", path);
}

/* ./train fixed.json --set output.dir=NAME [sets...], in the current folder */
static void train_seed(const char *name, const char *const *sets, int n_sets)
{
    char out[256];
    snprintf(out, sizeof out, "output.dir=%s", name);
    char *argv[32] = {"train", "fixed.json", "--set", out};
    int argc = 4;
    for (int i = 0; i < n_sets; i++)
        argv[argc++] = "--set", argv[argc++] = (char *)sets[i];
    if (tt_train_main(argc, argv)) fail("seed training", name);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *seeds = getenv("TT_FUZZ_SEEDS");
    if (seeds) {
        /* in DIR itself: the checkpoints' configs name DIR's files, and fuzz_seeds.sh's DIR
         * is always the same, so a rerun writes the same bytes */
        if (chdir(seeds)) fail("chdir", seeds);
        put("fixed.json", FIXED_CONFIG);
        put("tag.txt", TAG_DATA);
        put("lm.txt", LM_DATA);
        train_seed("tag", NULL, 0);
        train_seed("lm", LM_SETS, (int)(sizeof LM_SETS / sizeof *LM_SETS));
        exit(0);
    }
    tt_fuzz_write("tag.txt", TAG_DATA, sizeof TAG_DATA - 1);
    tt_fuzz_write("lm.txt", LM_DATA, sizeof LM_DATA - 1);
    char config[1024];
    snprintf(config, sizeof config, "%s",
             tt_fuzz_write("fixed.json", FIXED_CONFIG, sizeof FIXED_CONFIG - 1));
    /* MemAvailable for budget.c: 256 MiB */
    static const char meminfo[] = "MemAvailable:     262144 kB\n";
    char root[1024];
    snprintf(root, sizeof root, "%s/memroot", tt_fuzz_dir());
    mkdir(root, 0700);
    mkdir(tt_fuzz_path("memroot/proc"), 0700);
    tt_fuzz_write("memroot/proc/meminfo", meminfo, sizeof meminfo - 1);
    setenv("TT_MEM_ROOT", root, 1);
    char err[2048];
    if (tt_config_load(&fixed.cfg, config, NULL, 0, err, sizeof err) ||
        tt_corpus_load(&fixed.data, &fixed.cfg, err, sizeof err) ||
        tt_run_init(&fixed, err, sizeof err))
        fail("the fixed run", err);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = tt_fuzz_write("input.safetensors", data, size);
    char err[2048] = "";
    int rc = tt_checkpoint_load(&fixed, path, err, sizeof err);
    tt_fuzz_note("tt_checkpoint_load", rc ? err : "");
    if (rc && !err[0]) fail("tt_checkpoint_load", "-1 without a message");
    tt_run r;
    err[0] = '\0';
    rc = tt_use_open(&r, path, USE_SETS, 1, err, sizeof err);
    tt_fuzz_note("tt_use_open", rc ? err : "");
    if (rc == 0)
        tt_run_free(&r);
    else if (!err[0])
        fail("tt_use_open", "-1 without a message");
    return 0;
}
