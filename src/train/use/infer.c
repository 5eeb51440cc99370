/* infer.c: the command line of ./infer, the program that uses what ./train wrote (use.h):
 *   ./infer maps CHECKPOINT SENTENCE... [--out DIR] [--layer L] [--head H]
 *   ./infer predict CHECKPOINT (SENTENCE... | --file FILE) [--top-k K]
 *   ./infer generate CHECKPOINT PROMPT [--words N] [--temperature T] [--top-k K] [--seed S]
 *   ./infer eval CHECKPOINT FILE
 * and, for each, --device and --threads. Answers go to stdout, notes and errors to stderr.
 * Exit status as ./train's: 0 done, 2 a mistake in the input (one message); this file is the
 * one place here where a -1 status becomes exit status 2. */
#include "train/infer.h"

#include "train/report/render.h"
#include "train/use/use.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERR_LEN 2048
#define MAX_TEXTS 64
/* predict --file: the longest line, in bytes (a sentence the model sees is data.seq_len words:
 * far less); a longer one, or a NUL byte, ends the command, so /dev/zero ends at once */
#define LINE_MAX_BYTES ((size_t)1 << 20)
/* generate --words: at most this many, or data.seq_len when that is more (each word is one
 * forward pass of up to seq_len words) */
#define MAX_WORDS 1000

static const char USAGE[] =
    "usage: ./infer COMMAND CHECKPOINT [ARGUMENTS] [OPTIONS]\n"
    "  maps CK SENTENCE...        the attention maps of each sentence, every layer and head\n"
    "      --layer L, --head H    only that layer or head (numbered from 0)\n"
    "      --out DIR              also DIR/epoch_NNN.json (BertViz layout), .svg and the\n"
    "                             viewer index.html (DIR: new or empty)\n"
    "  predict CK SENTENCE...     tag: each word's tag; classify: the label and its\n"
    "                             probability; mlm: fillers of each [MASK]; lm: the next word\n"
    "      --file FILE            every line of FILE instead (a data file's TAB part is skipped)\n"
    "      --top-k K              the K best answers with probabilities (default 1 for tag\n"
    "                             and classify, 5 for mlm and lm)\n"
    "  generate CK PROMPT         lm: the prompt and N more words, each drawn given the words\n"
    "                             before it\n"
    "      --words N              how many (default 10)\n"
    "      --temperature T        sample from softmax(logits / T) (default 1; 0: the most\n"
    "                             likely word every time)\n"
    "      --top-k K              sample among the K most likely words only (default 0: all)\n"
    "      --seed S               the draws (default 0): the same seed, the same text\n"
    "  eval CK FILE               loss and accuracy on FILE (the task's data format), as the\n"
    "                             trainer's evaluation lines give them\n"
    "options of every command:\n"
    "  --device cpu|cuda|guard    where the model runs (default cpu)\n"
    "  --threads N                CPU threads (default: the checkpoint's config; 0: all cores)\n"
    "  -h, --help                 this text\n"
    "CK is a checkpoint written by ./train (RUN/checkpoints/epoch_NNN.safetensors). Words are\n"
    "spelled as its training data are (lower case, punctuation dropped, when its vocabulary\n"
    "has neither); words it does not know are fed as [UNK], named on stderr and shown so.\n"
    "More: docs/infer.md, docs/design.md.\n";
/* what a mistake on the command line prints after its message */
static const char SHORT_USAGE[] =
    "usage: ./infer maps|predict|generate|eval CHECKPOINT ARGUMENTS... [OPTIONS]\n"
    "more: ./infer --help";

typedef struct args {
    const char *cmd, *ckpt, *texts[MAX_TEXTS], *file, *out, *device, *threads;
    int n_texts, layer, head, top_k, words;
    double temperature;
    long long seed;
    tt_use_spelling spelling; /* the checkpoint's (spell_texts) */
} args;

/* The message (a path or a sentence in it may hold control characters: escaped, so that
 * they cannot act on the terminal), exit status 2. */
static int fail(const char *msg)
{
    fputs("infer: ", stderr);
    tt_term_puts(stderr, msg, "\n");
    fputc('\n', stderr);
    return 2;
}

/* An integer option in [lo, hi], or -1 with the message. */
static int int_of(const char *opt, const char *s, long long lo, long long hi, long long *out,
                  char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return tt_errorf(err, errlen, "%s %s: allowed: an integer in [%lld, %lld]", opt, s, lo,
                         hi);
    *out = v;
    return 0;
}

/* --device: a known device that this build has and this machine can run. */
static int check_device(const char *name, char *err, size_t errlen)
{
    static const char *names[] = {"cpu", "cuda", "guard"};
    static const tt_device devs[] = {TT_CPU, TT_CUDA, TT_GUARD};
    int i = 0;
    while (i < 3 && strcmp(name, names[i])) i++;
    if (i == 3) return tt_errorf(err, errlen, "--device %s: allowed: cpu, cuda, guard", name);
    char why[512];
    if (tt_backend_open(devs[i], why, sizeof why)) return 0;
    /* its message names the config key ("device \"cuda\": ..."), ours the option */
    char *hint = strstr(why, " HINT:"), *what = strstr(why, "\": ");
    if (hint) *hint = '\0';
    return tt_errorf(err, errlen, "--device %s: %s\nHINT: --device cpu runs on the CPU%s", name,
                     what && (!hint || what < hint) ? what + 3 : why,
                     devs[i] == TT_CUDA ? "; a build with CUDA: make CUDA=1" : "");
}

static int parse(args *a, int argc, char **argv, char *err, size_t errlen)
{
    *a = (args){.layer = -1, .head = -1, .top_k = -1, .words = 10, .temperature = 1,
                .device = "cpu"};
    static const char *cmds[] = {"maps", "predict", "generate", "eval"};
    if (argc < 2) return tt_errorf(err, errlen, "no command given\n%s", SHORT_USAGE);
    a->cmd = argv[1];
    bool known = false;
    for (int i = 0; i < 4; i++) known |= !strcmp(a->cmd, cmds[i]);
    if (!known)
        return tt_errorf(err, errlen, "%s: unknown command; allowed: maps, predict, generate, "
                         "eval\n%s", a->cmd, SHORT_USAGE);
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        long long v = 0;
        if (o[0] != '-' || !o[1]) { /* a positional argument ("-" alone is one too) */
            if (!a->ckpt) a->ckpt = o;
            else if (a->n_texts == MAX_TEXTS)
                return tt_errorf(err, errlen, "more than %d sentences", MAX_TEXTS);
            else a->texts[a->n_texts++] = o;
            continue;
        }
        if (i + 1 >= argc)
            return tt_errorf(err, errlen, "%s: unknown option or missing value\n%s", o,
                             SHORT_USAGE);
        const char *val = argv[++i];
        int rc = 0;
        if (!strcmp(o, "--out")) a->out = val;
        else if (!strcmp(o, "--file")) a->file = val;
        else if (!strcmp(o, "--device")) a->device = val;
        else if (!strcmp(o, "--threads")) rc = int_of(o, val, 0, 1024, &v, err, errlen),
                                          a->threads = val;
        else if (!strcmp(o, "--layer")) rc = int_of(o, val, 0, 1 << 20, &v, err, errlen),
                                        a->layer = (int)v;
        else if (!strcmp(o, "--head")) rc = int_of(o, val, 0, 1 << 20, &v, err, errlen),
                                       a->head = (int)v;
        else if (!strcmp(o, "--top-k")) rc = int_of(o, val, 0, 1 << 24, &v, err, errlen),
                                        a->top_k = (int)v;
        else if (!strcmp(o, "--words")) rc = int_of(o, val, 1, 1 << 20, &v, err, errlen),
                                        a->words = (int)v;
        else if (!strcmp(o, "--seed")) rc = int_of(o, val, 0, (1LL << 53) - 1, &a->seed, err,
                                                    errlen);
        else if (!strcmp(o, "--temperature")) {
            char *end = NULL;
            a->temperature = strtod(val, &end);
            if (end == val || *end || !isfinite(a->temperature) || a->temperature < 0 ||
                (a->temperature > 0 && a->temperature < 1e-3) || a->temperature > 1e3)
                rc = tt_errorf(err, errlen, "--temperature %s: allowed: 0 (the most likely "
                               "word) or a number in [0.001, 1000]", val);
        } else
            return tt_errorf(err, errlen, "%s: unknown option\n%s", o, SHORT_USAGE);
        if (rc) return -1;
    }
    if (!a->ckpt)
        return tt_errorf(err, errlen, "%s: no checkpoint given\n%s", a->cmd, SHORT_USAGE);
    bool eval = !strcmp(a->cmd, "eval"), predict = !strcmp(a->cmd, "predict");
    int want = eval || !strcmp(a->cmd, "generate") ? 1 : -1; /* -1: one or more */
    if (predict && a->file && a->n_texts)
        return tt_errorf(err, errlen, "predict: sentences and --file %s: give one or the "
                         "other", a->file);
    if (!(predict && a->file) && (want < 0 ? a->n_texts < 1 : a->n_texts != want))
        return tt_errorf(err, errlen, "%s: %s\n%s", a->cmd,
                         eval ? "want one data file after the checkpoint"
                         : want == 1 ? "want one prompt after the checkpoint (quote it)"
                                     : "want at least one sentence after the checkpoint",
                         SHORT_USAGE);
    return check_device(a->device, err, errlen);
}

/* DIR for --out: created, or an existing empty folder (its viewer shows every epoch file in
 * it, so another run's must not be there). */
static int out_dir(const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, 0777) == 0) return 0;
    if (errno != EEXIST)
        return tt_errorf(err, errlen, "--out %s: cannot create the folder: %s", dir,
                         strerror(errno));
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        return tt_errorf(err, errlen, "--out %s: exists and is not a folder", dir);
    DIR *d = opendir(dir);
    if (!d) return tt_errorf(err, errlen, "--out %s: cannot read: %s", dir, strerror(errno));
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return entries == 0 ? 0 : tt_errorf(err, errlen, "--out %s: the folder is not "
                                                "empty; allowed: a new or empty folder (its "
                                                "index.html shows every epoch file in it)", dir);
}

/* The sentences (maps, predict) or the prompt (generate) spelled as the corpus is (use.h) into
 * spelled[], a note saying so where that changed them, each word the model does not know named;
 * one with no word is refused. */
static int spell_texts(const tt_run *r, args *a, char **spelled, char *err, size_t errlen)
{
    const tt_vocab *v = &r->data.words;
    tt_use_spelling_of(&a->spelling, v);
    tt_use_spelling as_is = {.lower = false};
    memset(as_is.keep, true, sizeof as_is.keep);
    bool prompt = !strcmp(a->cmd, "generate"), eval = !strcmp(a->cmd, "eval");
    for (int i = 0; i < a->n_texts && !eval; i++) {
        char what[32], *same = tt_use_spell(&as_is, v, a->texts[i]);
        snprintf(what, sizeof what, prompt ? "the prompt" : "sentence %d", i + 1);
        spelled[i] = tt_use_spell(&a->spelling, v, a->texts[i]);
        if (*spelled[i] && strcmp(same, spelled[i])) {
            char *shown = tt_use_escaped(spelled[i], strlen(spelled[i]));
            fprintf(stderr, "note: %s read as \"%s\" (spelled as the training data)\n", what,
                    shown);
            free(shown);
        }
        if (!*spelled[i]) {
            char *shown = tt_use_escaped(a->texts[i], strlen(a->texts[i]));
            tt_errorf(err, errlen, "%s \"%.200s\": no words%s; allowed: one word or more",
                      what, shown, same[0] ? " once punctuation is dropped" : "");
            free(shown);
            free(same);
            return -1;
        }
        free(same);
        tt_use_warn_unknown(v, spelled[i], what, stderr);
        a->texts[i] = spelled[i];
    }
    return 0;
}

static int cmd_maps(tt_run *r, const args *a, char *err, size_t errlen)
{
    const int L = r->cfg.model.n_layers, H = r->cfg.model.n_heads;
    if (a->layer >= L || a->head >= H)
        return tt_errorf(err, errlen, "--%s %d: the model has %d %s (numbered from 0)",
                         a->layer >= L ? "layer" : "head", a->layer >= L ? a->layer : a->head,
                         a->layer >= L ? L : H, a->layer >= L ? "layers" : "heads");
    /* the folder's lock as ./train takes it (run.h), so that no run writes there meanwhile */
    int lock = -1;
    if (a->out && (out_dir(a->out, err, errlen) ||
                   tt_run_folder_lock(a->out, &lock, err, errlen)))
        return -1;
    tt_attn_epoch e;
    tt_use_maps(r, a->texts, a->n_texts, &e);
    int rc = 0;
    for (int p = 0; p < e.n_probes; p++)
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) {
                if ((a->layer >= 0 && l != a->layer) || (a->head >= 0 && h != a->head)) continue;
                printf("\"%s\": layer %d, head %d (epoch %d; rows attend to columns)\n",
                       e.probes[p].text, l, h, e.epoch);
                tt_render_terminal(stdout, &e, p, l, h);
                printf("\n");
            }
    if (a->out) {
        char path[TT_CONFIG_PATH + 64];
        snprintf(path, sizeof path, "%s/epoch_%03d.json", a->out, e.epoch);
        rc = tt_attn_epoch_write(&e, path, err, errlen);
        snprintf(path, sizeof path, "%s/epoch_%03d.svg", a->out, e.epoch);
        if (!rc) rc = tt_render_heatmap_svg(&e, path, err, errlen);
        if (!rc) rc = tt_render_index_html(a->out, err, errlen);
        if (!rc) printf("wrote %s/epoch_%03d.json, .svg and %s/index.html\n", a->out, e.epoch,
                        a->out);
    }
    tt_attn_epoch_free(&e);
    if (lock >= 0) close(lock);
    return rc;
}

/* One line of f into buf (cap bytes), its end (LF, CRLF or a lone CR) dropped: its length, -1
 * at the end of the file, -2 when it holds more than cap - 1 bytes, -3 at a NUL byte. */
static long read_line(FILE *f, char *buf, size_t cap)
{
    size_t n = 0;
    int c;
    bool ended = false;
    while ((c = getc(f)) != EOF) {
        if (c == '\n' || c == '\r') {
            ended = true;
            if (c == '\r' && (c = getc(f)) != '\n' && c != EOF) ungetc(c, f);
            break;
        }
        if (c == 0) return -3;
        if (n == cap - 1) return -2;
        buf[n++] = (char)c;
    }
    if (!ended && n == 0) return -1;
    buf[n] = '\0';
    return (long)n;
}

/* --file: each line's sentence (for tag, the words before a TAB; for classify, after it),
 * spelled as the corpus is; a blank line, or one with no word left, gives a blank line. A file
 * without one sentence is refused, and then nothing is written. */
static int predict_file(tt_run *r, const args *a, int k, char *err, size_t errlen)
{
    FILE *f = fopen(a->file, "r");
    if (!f) return tt_errorf(err, errlen, "--file %s: cannot open: %s", a->file, strerror(errno));
    char *line = tt_xmalloc(LINE_MAX_BYTES + 1), msg[ERR_LEN], where[TT_CONFIG_PATH + 32];
    int rc = 0, lineno = 0, sentences = 0, blanks = 0; /* blank lines not yet written */
    for (long n; rc == 0 && (n = read_line(f, line, LINE_MAX_BYTES + 1)) != -1;) {
        lineno++;
        if (n < 0) {
            rc = tt_errorf(err, errlen, "%s:%d: %s; allowed: UTF-8 text, lines of at most %zu "
                           "bytes", a->file, lineno, n == -2 ? "a line longer than 1 MiB"
                                                             : "a NUL byte", LINE_MAX_BYTES);
            break;
        }
        /* a byte order mark some editors write at the start of a file */
        char *text = line + (lineno == 1 && !strncmp(line, "\xEF\xBB\xBF", 3) ? 3 : 0);
        char *tab = strchr(text, '\t');
        if (tab && r->data.task == TT_TASK_CLASSIFY) text = tab + 1;
        else if (tab) *tab = '\0';
        if (tt_utf8_valid_prefix(text, strlen(text)) < strlen(text)) {
            rc = tt_errorf(err, errlen, "%s:%d: invalid UTF-8", a->file, lineno);
            break;
        }
        snprintf(where, sizeof where, "%s:%d", a->file, lineno);
        char *spelled = tt_use_spell(&a->spelling, &r->data.words, text);
        if (!*spelled) {
            if (text[strspn(text, " \t")])
                fprintf(stderr, "warning: %s: no words once punctuation is dropped: answered "
                        "with a blank line\n", where);
            blanks++;
        } else {
            for (sentences++; blanks; blanks--) printf("\n");
            tt_use_warn_unknown(&r->data.words, spelled, where, stderr);
            if (tt_use_predict(r, spelled, k, stdout, msg, sizeof msg))
                rc = tt_errorf(err, errlen, "%s: %s", where, msg);
        }
        free(spelled);
    }
    if (!rc && ferror(f)) rc = tt_errorf(err, errlen, "%s: cannot read", a->file);
    if (!rc && !sentences)
        rc = tt_errorf(err, errlen, "--file %s: no sentence in it (%d lines); allowed: a file "
                       "of sentences, one a line", a->file, lineno);
    for (; !rc && blanks; blanks--) printf("\n");
    free(line);
    fclose(f);
    return rc;
}

static int cmd_predict(tt_run *r, const args *a, char *err, size_t errlen)
{
    tt_task t = r->data.task;
    int k = a->top_k >= 0 ? a->top_k : t == TT_TASK_MLM || t == TT_TASK_LM ? 5 : 1;
    if (k < 1) return tt_errorf(err, errlen, "predict --top-k 0: allowed: 1 or more");
    if (a->file) return predict_file(r, a, k, err, errlen);
    for (int i = 0; i < a->n_texts; i++)
        if (tt_use_predict(r, a->texts[i], k, stdout, err, errlen)) return -1;
    return 0;
}

static int cmd_generate(tt_run *r, const args *a, char *err, size_t errlen)
{
    const int most = r->cfg.data.seq_len > MAX_WORDS ? r->cfg.data.seq_len : MAX_WORDS;
    if (a->words > most)
        return tt_errorf(err, errlen, "--words %d: allowed: 1 to %d (%d or data.seq_len, "
                         "whichever is more: each word is one pass of the model)", a->words,
                         most, MAX_WORDS);
    tt_generate_opts o = {.words = a->words, .temperature = a->temperature,
                          .top_k = a->top_k > 0 ? a->top_k : 0, .seed = (uint64_t)a->seed};
    return tt_use_generate(r, a->texts[0], &o, stdout, NULL, err, errlen);
}

static int cmd_eval(tt_run *r, const args *a, char *err, size_t errlen)
{
    tt_eval e;
    if (tt_use_evaluate(r, a->texts[0], &e, err, errlen)) return -1;
    if (e.count == 0)
        return tt_errorf(err, errlen, "%s: %d examples and not one target to score, so no loss "
                         "or accuracy; allowed: a data file with targets (%s)", a->texts[0],
                         r->data.valid.n, r->data.task == TT_TASK_LM
                             ? "lm: sentences of two or more words"
                         : r->data.task == TT_TASK_MLM
                             ? "mlm: masked words are drawn at data.mask_prob; more sentences"
                             : "tag or classify: one or more lines");
    bool classify = r->data.task == TT_TASK_CLASSIFY;
    printf("%s: %d examples, %lld %s (checkpoint %s, epoch %d)\n", a->texts[0],
           r->data.valid.n, (long long)e.count, classify ? "sentences" : "targets", a->ckpt,
           r->epoch);
    printf("loss %.6f  accuracy %.6f", e.loss, e.acc);
    if (r->data.n_ambiguous && e.count_ambiguous)
        printf("  on the ambiguous words %.6f (%lld targets)", e.acc_ambiguous,
               (long long)e.count_ambiguous);
    printf("\n");
    return 0;
}

int tt_infer_main(int argc, char **argv)
{
    char err[ERR_LEN];
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(USAGE, stdout);
            return 0;
        }
    args a;
    if (parse(&a, argc, argv, err, sizeof err)) return fail(err);
    char device[64], threads[64];
    const char *sets[2] = {device, threads};
    snprintf(device, sizeof device, "device=\"%.40s\"", a.device);
    snprintf(threads, sizeof threads, "threads=%.40s", a.threads ? a.threads : "");
    tt_run r;
    if (tt_use_open(&r, a.ckpt, sets, a.threads ? 2 : 1, err, sizeof err)) return fail(err);
    char *spelled[MAX_TEXTS] = {0};
    int rc = spell_texts(&r, &a, spelled, err, sizeof err);
    if (!rc)
        rc = !strcmp(a.cmd, "maps")       ? cmd_maps(&r, &a, err, sizeof err)
             : !strcmp(a.cmd, "predict")  ? cmd_predict(&r, &a, err, sizeof err)
             : !strcmp(a.cmd, "generate") ? cmd_generate(&r, &a, err, sizeof err)
                                          : cmd_eval(&r, &a, err, sizeof err);
    fflush(stdout);
    for (int i = 0; i < MAX_TEXTS; i++) free(spelled[i]);
    tt_run_free(&r);
    return rc ? fail(err) : 0;
}
