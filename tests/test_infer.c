/* test_infer.c: ./infer, using a trained checkpoint, in process (tt_infer_main and the use.h
 * API) on small corpora trained here: the evaluation of the validation file gives the
 * trainer's last evaluation line; predictions agree with that evaluation word for word; the
 * maps of a probe sentence are the trainer's; a language model's rows depend only on earlier
 * words (and a bidirectional model's do not, so the check can fail); generation is
 * deterministic in its seed, greedy at temperature 0, UTF-8 (Korean) safe and written word by
 * word; sentences are spelled as the corpus is; every bad input exits 2 with one message and
 * leaves the folder as it was. */
#define _GNU_SOURCE /* fopencookie: a stream that counts its writes */
#include "testutil.h"
#include "train_testutil.h"

#include "train/cli.h"
#include "train/infer.h"
#include "train/report/render.h"
#include "train/use/use.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define put tt_test_put

/* Runs main (tt_train_main or tt_infer_main) with the arguments (NULL-terminated), stdout into
 * out and stderr into msg (each at most len bytes); returns the exit status. */
static int call(int (*main_fn)(int, char **), char *out, char *msg, size_t len, ...)
{
    va_list ap;
    va_start(ap, len);
    int rc = tt_test_main(main_fn, out, msg, len, ap);
    va_end(ap);
    return rc;
}

#define LEN 65536
static char out[LEN], msg[LEN];

/* A language-model corpus: "s0 w w ..." counting sentences, English and Korean words. */
static void write_lm_corpus(void)
{
    static const char *w[] = {"one", "two", "three", "four", "하나", "둘", "셋", "넷"};
    char *train = tt_xcalloc(1, 1 << 16), *valid = tt_xcalloc(1, 1 << 14), line[256];
    for (int i = 0; i < 120; i++) {
        int start = i % 8;
        line[0] = '\0';
        for (int k = 0; k < 6; k++) {
            strcat(line, w[(start + k) % 8]);
            strcat(line, k < 5 ? " " : "\n");
        }
        strcat(i % 10 == 9 ? valid : train, line);
    }
    put("lm_train.txt", train);
    put("lm_valid.txt", valid);
    free(train);
    free(valid);
}

static const char *TAG_CONFIG =
    "{\"seed\": 5, \"threads\": 1,\n"
    " \"data\": {\"task\": \"tag\", \"seq_len\": 6, \"ambiguous\": [\"x\"],\n"
    "          \"probes\": [\"a x p a\", \"사과 x zzz\"]},\n"
    " \"model\": {\"d_model\": 16, \"n_heads\": 2, \"n_layers\": 2, \"d_ff\": 32, \"dropout\": 0.1},\n"
    " \"train\": {\"epochs\": 3, \"batch_size\": 8, \"lr\": 0.005},\n"
    " \"output\": {\"dir\": \"%s/tag\"}}\n";

static const char *LM_CONFIG =
    "{\"seed\": 2, \"threads\": 1,\n"
    " \"data\": {\"task\": \"%s\", \"seq_len\": 6, \"train\": \"lm_train.txt\",\n"
    "          \"valid\": \"lm_valid.txt\"},\n"
    " \"model\": {\"d_model\": 16, \"n_heads\": 2, \"n_layers\": 1, \"d_ff\": 32, \"dropout\": 0},\n"
    " \"train\": {\"epochs\": 3, \"batch_size\": 8, \"lr\": 0.01},\n"
    " \"output\": {\"dir\": \"%s/%s\", \"attention_every\": 0}}\n";

static char tag_ck[4096], lm_ck[4096], mlm_ck[4096];

/* Trains the tag, lm and mlm models once per test (each well under a second). */
static void setup(void)
{
    tt_tmp_setup();
    const char *dir = tt_test_tmpdir();
    char text[2048];
    tt_test_tag_corpus_with("사과"); /* a Korean word among the first words */
    write_lm_corpus();
    snprintf(text, sizeof text, TAG_CONFIG, dir);
    put("tag.json", text);
    const char *tasks[2] = {"lm", "mlm"};
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof text, LM_CONFIG, tasks[i], dir, tasks[i]);
        char name[16];
        snprintf(name, sizeof name, "%s.json", tasks[i]);
        put(name, text);
    }
    const char *cfgs[3] = {"tag.json", "lm.json", "mlm.json"};
    char *cks[3] = {tag_ck, lm_ck, mlm_ck};
    const char *runs[3] = {"tag", "lm", "mlm"};
    for (int i = 0; i < 3; i++) {
        char cfg[4096];
        snprintf(cfg, sizeof cfg, "%s", tt_test_path(cfgs[i]));
        int rc = call(tt_train_main, out, msg, LEN, cfg, NULL);
        ck_assert_msg(rc == 0, "training %s: exit %d: %s", cfgs[i], rc, msg);
        snprintf(cks[i], 4096, "%s/%s/checkpoints/epoch_003.safetensors", dir, runs[i]);
    }
}

/* In place: a run holds pointers into itself (the graph to its arenas), so it is never
 * copied. */
static void open_ck(tt_run *r, const char *ck)
{
    char err[2048];
    const char *sets[1] = {"device=\"cpu\""};
    ck_assert_msg(tt_use_open(r, ck, sets, 1, err, sizeof err) == 0, "%s", err);
}

/* The last evaluation line of RUN/metrics.jsonl. */
static void last_eval(const char *run, double *loss, double *acc, double *amb)
{
    char err[512], path[4096];
    snprintf(path, sizeof path, "%s/%s/metrics.jsonl", tt_test_tmpdir(), run);
    char *text = tt_render_slurp(path, err, sizeof err);
    ck_assert_msg(text, "%s", err);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        ck_assert_ptr_nonnull(o);
        const cJSON *a = cJSON_GetObjectItem(o, "valid_acc");
        if (a) {
            *acc = a->valuedouble;
            *loss = cJSON_GetObjectItem(o, "valid_loss")->valuedouble;
            const cJSON *m = cJSON_GetObjectItem(o, "valid_acc_ambiguous");
            *amb = m ? m->valuedouble : -1;
        }
        cJSON_Delete(o);
    }
    free(text);
}

static void close_to(const char *what, double got, double want)
{
    ck_assert_msg(fabs(got - want) <= 2e-8 * fmax(1, fabs(want)), "%s: ./infer %.10g, the "
                  "trainer's metrics.jsonl %.10g", what, got, want);
}

/* eval: the trainer's figures for its own validation file (tag with ambiguous words, lm and mlm
 * with their validation masks). */
START_TEST(test_eval_equals_trainer)
{
    const char *runs[3] = {"tag", "lm", "mlm"};
    const char *cks[3] = {tag_ck, lm_ck, mlm_ck};
    const char *valid[3] = {"valid.txt", "lm_valid.txt", "lm_valid.txt"};
    for (int i = 0; i < 3; i++) {
        double loss, acc, amb;
        last_eval(runs[i], &loss, &acc, &amb);
        tt_run r;
        open_ck(&r, cks[i]);
        tt_eval e;
        char err[2048];
        ck_assert_msg(tt_use_evaluate(&r, tt_test_path(valid[i]), &e, err, sizeof err) == 0,
                      "%s", err);
        close_to("valid_loss", e.loss, loss);
        close_to("valid_acc", e.acc, acc);
        if (amb >= 0) close_to("valid_acc_ambiguous", e.acc_ambiguous, amb);
        tt_run_free(&r);
    }
    char file[4096];
    snprintf(file, sizeof file, "%s", tt_test_path("valid.txt"));
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "eval", tag_ck, file, NULL), 0);
    ck_assert_msg(strstr(out, "accuracy") && strstr(out, "on the ambiguous words"), "%s", out);
}
END_TEST

/* predict --file on the validation file: its tags, compared with the file's, give exactly the
 * accuracy the evaluation gives (both take each word's most likely tag). */
START_TEST(test_predict_agrees_with_eval)
{
    char file[4096];
    snprintf(file, sizeof file, "%s", tt_test_path("valid.txt"));
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "predict", tag_ck, "--file", file, NULL),
                     0);
    char err[512];
    char *gold = tt_render_slurp(file, err, sizeof err);
    ck_assert_ptr_nonnull(gold);
    int right = 0, total = 0;
    char *gs, *ps;
    char *gl = strtok_r(gold, "\n", &gs), *pl = strtok_r(out, "\n", &ps);
    for (; gl && pl; gl = strtok_r(NULL, "\n", &gs), pl = strtok_r(NULL, "\n", &ps)) {
        char *tags = strchr(gl, '\t') + 1, *ts, *ws;
        for (char *t = strtok_r(tags, " ", &ts), *w = strtok_r(pl, " ", &ws); t && w;
             t = strtok_r(NULL, " ", &ts), w = strtok_r(NULL, " ", &ws)) {
            const char *slash = strrchr(w, '/');
            ck_assert_msg(slash, "not word/TAG: %s", w);
            right += strcmp(slash + 1, t) == 0;
            total++;
        }
    }
    ck_assert_msg(!gl && !pl, "predict printed another number of lines than the file has");
    free(gold);
    double loss, acc, amb;
    last_eval("tag", &loss, &acc, &amb);
    ck_assert_msg(total == 48 && fabs((double)right / total - acc) < 1e-9,
                  "predict: %d of %d tags right; the evaluation's accuracy %.6f", right, total,
                  acc);
    /* an unknown word is fed and shown as [UNK]; --top-k 2 lists two tags per word */
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "predict", tag_ck, "zzz x p", NULL), 0);
    ck_assert_msg(!strncmp(out, "[UNK]/", 6), "%s", out);
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "predict", tag_ck, "a x", "--top-k",
                          "2", NULL), 0);
    ck_assert_msg(strstr(out, "a  ") && strstr(out, "x  ") && strchr(out, ','), "%s", out);
}
END_TEST

/* maps: the trainer's own maps of its probe sentences at the same epoch, and --out writes the
 * epoch file, its SVG and a viewer. */
START_TEST(test_maps_equal_probe_maps)
{
    char dir[4096], err[2048], want_path[4200], got_path[4200];
    snprintf(dir, sizeof dir, "%s", tt_test_path("maps"));
    int rc = call(tt_infer_main, out, msg, LEN, "maps", tag_ck, "a x p a", "사과 x zzz", "--out",
                  dir, NULL);
    ck_assert_msg(rc == 0, "%s", msg);
    ck_assert_msg(strstr(out, "layer 1, head 1") && strstr(out, "mean row entropy"), "%s", out);
    snprintf(want_path, sizeof want_path, "%s/tag/attention/epoch_003.json", tt_test_tmpdir());
    snprintf(got_path, sizeof got_path, "%s/epoch_003.json", dir);
    tt_attn_epoch want, got;
    ck_assert_msg(tt_attn_epoch_read(&want, want_path, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(tt_attn_epoch_read(&got, got_path, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(got.n_probes, 2);
    for (int p = 0; p < 2; p++) {
        ck_assert_int_eq(got.probes[p].T, want.probes[p].T);
        ck_assert_str_eq(got.probes[p].tokens[2], want.probes[p].tokens[2]); /* zzz as written */
        int n = got.L * got.H * got.probes[p].T * got.probes[p].T;
        for (int i = 0; i < n; i++)
            ck_assert_msg(fabs((double)(got.probes[p].w[i] - want.probes[p].w[i])) < 1e-6,
                          "probe %d weight %d: %g, the trainer's %g", p, i,
                          (double)got.probes[p].w[i], (double)want.probes[p].w[i]);
    }
    tt_attn_epoch_free(&want);
    tt_attn_epoch_free(&got);
    const char *files[2] = {"maps/epoch_003.svg", "maps/index.html"};
    for (int i = 0; i < 2; i++) ck_assert_msg(access(tt_test_path(files[i]), R_OK) == 0, "%s",
                                              files[i]);
    /* a folder that holds something is refused: its viewer would show foreign epochs */
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "maps", tag_ck, "a x", "--out", dir,
                          NULL), 2);
    ck_assert_msg(strstr(msg, "not empty"), "%s", msg);
}
END_TEST

/* Row t of a language model's logits depends on words 0..t only: changing the later words
 * leaves rows 0..t bit for bit; a bidirectional model (mlm) changes them, so the comparison
 * can fail. */
START_TEST(test_causal_rows)
{
    const char *cks[2] = {lm_ck, mlm_ck};
    for (int m = 0; m < 2; m++) {
        tt_run r;
        open_ck(&r, cks[m]);
        const int V = r.data.words.n, T = r.cfg.data.seq_len;
        int32_t a[6], b[6];
        for (int t = 0; t < 6; t++) a[t] = b[t] = TT_TOK_SPECIALS + (t % (V - 3));
        b[4] = b[3], b[5] = TT_TOK_SPECIALS; /* words 4 and 5 differ */
        real *la = tt_use_logits(&r, a, 6), *lb = tt_use_logits(&r, b, 6);
        bool same = memcmp(la, lb, (size_t)4 * V * sizeof(real)) == 0;
        ck_assert_msg(m == 0 ? same : !same, "%s: rows 0-3 %s when words 4-5 change",
                      m == 0 ? "lm" : "mlm", same ? "unchanged" : "changed");
        /* and for the lm, the logits of a prefix alone are those rows */
        if (m == 0) {
            real *lp = tt_use_logits(&r, a, 3);
            ck_assert(memcmp(la, lp, (size_t)3 * V * sizeof(real)) == 0);
            free(lp);
        }
        (void)T;
        free(la);
        free(lb);
        tt_run_free(&r);
    }
}
END_TEST

/* Generation: at temperature 0 each word is the most likely non-special next word given the
 * words before it; a seed fixes the text; --top-k 1 is greedy; the text is UTF-8. */
START_TEST(test_generate)
{
    tt_run r;
    open_ck(&r, lm_ck);
    const int V = r.data.words.n, N = 8;
    int32_t ids[3 + 8];
    char err[2048];
    FILE *devnull = fopen("/dev/null", "w");
    tt_generate_opts greedy = {.words = N, .temperature = 0, .seed = 0};
    ck_assert_msg(tt_use_generate(&r, "하나 둘 셋", &greedy, devnull, ids, err, sizeof err) == 0,
                  "%s", err);
    for (int n = 3; n < 3 + N; n++) {
        int from = n > 6 ? n - 6 : 0;
        real *l = tt_use_logits(&r, ids + from, n - from);
        const real *row = l + (size_t)(n - from - 1) * V;
        int best = TT_TOK_SPECIALS;
        for (int v = TT_TOK_SPECIALS; v < V; v++)
            if (row[v] > row[best]) best = v;
        ck_assert_msg(ids[n] == best, "word %d: %d, the most likely is %d", n, ids[n], best);
        free(l);
    }
    /* the counting corpus is learned: after 하나 둘 셋 comes 넷 */
    ck_assert_str_eq(r.data.words.words[ids[3]], "넷");
    fclose(devnull);
    tt_run_free(&r);
    char a[LEN];
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "generate", lm_ck, "one two", "--words",
                          "12", "--seed", "7", NULL), 0);
    snprintf(a, sizeof a, "%s", out);
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "generate", lm_ck, "one two", "--words",
                          "12", "--seed", "7", NULL), 0);
    ck_assert_str_eq(a, out);
    int words = 0;
    for (char *p = a; *p; p++) words += *p == ' ';
    ck_assert_msg(words == 13 && !strncmp(a, "one two ", 8), "%s", a);
    ck_assert_msg(tt_utf8_valid_prefix(a, strlen(a)) == strlen(a), "not UTF-8: %s", a);
    /* many seeds at temperature 2 do not all give one text */
    bool differs = false;
    for (int s = 0; s < 8 && !differs; s++) {
        char seed[16];
        snprintf(seed, sizeof seed, "%d", s);
        ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "generate", lm_ck, "one two",
                              "--words", "12", "--seed", seed, "--temperature", "2", NULL), 0);
        differs = strcmp(a, out) != 0;
    }
    ck_assert_msg(differs, "eight seeds at temperature 2 all gave: %s", a);
    ck_assert_int_eq(call(tt_infer_main, a, msg, LEN, "generate", lm_ck, "하나", "--temperature",
                          "0", NULL), 0);
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "generate", lm_ck, "하나", "--top-k", "1",
                          "--seed", "3", NULL), 0);
    ck_assert_str_eq(a, out);
}
END_TEST

/* mlm: the fillers of [MASK], most likely first, never a special token. */
START_TEST(test_predict_mlm)
{
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "predict", mlm_ck, "one [MASK] three",
                          "--top-k", "3", NULL), 0);
    ck_assert_msg(!strncmp(out, "[MASK] (word 2):", 16), "%s", out);
    double p[3];
    char w[3][64];
    ck_assert_int_eq(sscanf(out + 16, " %63s %lf, %63s %lf, %63s %lf", w[0], &p[0], w[1], &p[1],
                            w[2], &p[2]), 6);
    ck_assert_msg(p[0] >= p[1] && p[1] >= p[2] && p[0] + p[1] + p[2] <= 1 + 1e-9, "%s", out);
    for (int i = 0; i < 3; i++) ck_assert_msg(w[i][0] != '[', "a special token: %s", out);
}
END_TEST

/* Words spelled as the corpus is: capitals lowered and punctuation dropped when the vocabulary
 * has neither, a vocabulary word and a special token kept whole; ./infer answers a sentence as
 * its spelling, says how it read it, and names each unknown word, escaped. */
START_TEST(test_spelling)
{
    tt_vocab v;
    tt_vocab_init(&v);
    const char *words[] = {"[PAD]", "[UNK]", "[MASK]", "time", "flies", "사과"};
    for (int i = 0; i < 6; i++) tt_vocab_add(&v, words[i], strlen(words[i]));
    tt_use_spelling sp;
    tt_use_spelling_of(&sp, &v);
    static const char *cases[][2] = {
        {"Time flies.", "time flies"}, {"TIME,flies!!", "time flies"},
        {" \t사과\r\n", "사과"},     {"[MASK].", "[MASK]"},
        {"ÉTÉ ×", "été ×"},           {"... -", ""},
        {"don't", "don t"},           {"[MASK]s", "[MASK] s"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = tt_use_spell(&sp, &v, cases[i][0]);
        ck_assert_msg(!strcmp(got, cases[i][1]), "\"%s\": \"%s\", want \"%s\"", cases[i][0],
                      got, cases[i][1]);
        free(got);
    }
    tt_vocab_add(&v, "Paris", 5); /* a vocabulary with capitals and an apostrophe keeps both */
    tt_vocab_add(&v, "don't", 5);
    tt_use_spelling_of(&sp, &v);
    char *got = tt_use_spell(&sp, &v, "Paris, don't Time.");
    ck_assert_str_eq(got, "Paris don't Time");
    free(got);
    tt_vocab_free(&v);
    char a[LEN];
    ck_assert_int_eq(call(tt_infer_main, a, msg, LEN, "predict", tag_ck, "a x p", NULL), 0);
    ck_assert_msg(!msg[0], "%s", msg);
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "predict", tag_ck, "A, X. P!", NULL), 0);
    ck_assert_str_eq(out, a);
    ck_assert_msg(strstr(msg, "read as \"a x p\"") && !strstr(msg, "warning"), "%s", msg);
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "predict", tag_ck, "a Zed q\x01 x",
                          NULL), 0);
    ck_assert_msg(strstr(msg, "warning: sentence 1: not in the model's vocabulary, read as "
                          "[UNK]: \"zed\", \"q\\x01\"\n"), "%s", msg);
    ck_assert_msg(!strncmp(out, "a/", 2) && strstr(out, " [UNK]/"), "%s", out);
}
END_TEST

static ssize_t count_write(void *writes, const char *buf, size_t n)
{
    (void)buf;
    ++*(int *)writes;
    return (ssize_t)n;
}

/* Input files and empty input: --file reads LF, CRLF (after a BOM) and lone-CR lines alike, and
 * so does the data reader (eval); an empty sentence or prompt, a file without one, data without
 * a target are refused; generation writes each word as it is drawn. Nothing on disk changes. */
START_TEST(test_input_edges)
{
    tt_test_snap before = {0}, after = {0};
    tt_test_snapshot(&before, tt_test_tmpdir(), "tag");
    tt_test_snapshot(&before, tt_test_tmpdir(), "lm");
    put("lf.txt", "a x p\nb x q\n\nc x r\n");
    put("cr.txt", "a x p\rb x q\r\rc x r");
    put("crlf.txt", "\xEF\xBB\xBF" "a x p\r\nb x q\r\n\r\nc x r\r\n");
    char a[LEN], path[4096];
    ck_assert_int_eq(call(tt_infer_main, a, msg, LEN, "predict", tag_ck, "--file",
                          tt_test_path("lf.txt"), NULL), 0);
    int lines = 0;
    for (char *p = a; *p; p++) lines += *p == '\n';
    ck_assert_msg(lines == 4 && strstr(a, "\n\nc/"), "%s", a);
    const char *others[] = {"cr.txt", "crlf.txt"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s", tt_test_path(others[i]));
        ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "predict", tag_ck, "--file", path,
                              NULL), 0);
        ck_assert_msg(!strcmp(out, a) && !msg[0], "%s: %s%s", others[i], out, msg);
    }
    /* the validation file with lone CRs: the same loss and accuracy */
    snprintf(path, sizeof path, "%s", tt_test_path("valid.txt"));
    char err[512], *text = tt_render_slurp(path, err, sizeof err);
    ck_assert_msg(text, "%s", err);
    for (char *p = text; *p; p++)
        if (*p == '\n') *p = '\r';
    put("valid_cr.txt", text);
    free(text);
    ck_assert_int_eq(call(tt_infer_main, a, msg, LEN, "eval", tag_ck, path, NULL), 0);
    snprintf(path, sizeof path, "%s", tt_test_path("valid_cr.txt"));
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, "eval", tag_ck, path, NULL), 0);
    ck_assert_msg(strstr(a, "loss ") && !strcmp(strstr(a, "loss "), strstr(out, "loss ")),
                  "%s%s", a, out);
    /* refused: empty input */
    put("blank.txt", "\n \t\r\n");
    put("short.txt", "one\ntwo\n");
    char blank[4096], shorts[4096];
    snprintf(blank, sizeof blank, "%s", tt_test_path("blank.txt"));
    snprintf(shorts, sizeof shorts, "%s", tt_test_path("short.txt"));
    const char *cases[][5] = {
        {"maps", tag_ck, "", NULL, "sentence 1 \"\": no words"},
        {"maps", tag_ck, "...", NULL, "sentence 1 \"...\": no words once punctuation"},
        {"predict", tag_ck, "a x", " ", "sentence 2 \" \": no words;"},
        {"generate", lm_ck, "?!", NULL, "the prompt \"?!\": no words"},
        {"predict", tag_ck, "--file", blank, "blank.txt: no sentence in it (2 lines)"},
        {"eval", lm_ck, shorts, NULL, "short.txt: 2 examples and not one target"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *const *c = cases[i];
        ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, c[0], c[1], c[2], c[3], NULL), 2);
        ck_assert_msg(strstr(msg, c[4]) && !strncmp(msg, "infer: ", 7) &&
                      !strstr(msg + 1, "infer: ") && !out[0], "case %zu: %s", i, msg);
    }
    /* generation: one write per word at least, into a stream with a 64 KiB buffer */
    tt_run r;
    open_ck(&r, lm_ck);
    int writes = 0;
    FILE *f = fopencookie(&writes, "w", (cookie_io_functions_t){.write = count_write});
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    tt_generate_opts greedy = {.words = 5, .temperature = 0};
    ck_assert_int_eq(tt_use_generate(&r, "one", &greedy, f, NULL, err, sizeof err), 0);
    ck_assert_msg(writes >= 5, "%d writes for 5 words", writes);
    fclose(f);
    tt_run_free(&r);
    tt_test_snapshot(&after, tt_test_tmpdir(), "tag");
    tt_test_snapshot(&after, tt_test_tmpdir(), "lm");
    ck_assert_msg(before.n == after.n && !memcmp(before.buf, after.buf, before.n),
                  "a run folder changed");
    free(before.buf);
    free(after.buf);
}
END_TEST

typedef struct bad {
    const char *args[8];
    const char *want;
} bad;

/* Every mistake: exit 2, one message naming what is wrong. */
START_TEST(test_bad_input)
{
    char dump[4096], notck[4096];
    snprintf(dump, sizeof dump, "%s", tt_test_path("dump.safetensors"));
    snprintf(notck, sizeof notck, "%s", tt_test_path("valid.txt"));
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "%s", tt_test_path("tag.json"));
    ck_assert_int_eq(call(tt_train_main, out, msg, LEN, cfg, "--dump-first-step", dump, NULL), 0);
    put("badtag.txt", "a x p\tD ZZ N\n");
    char badtag[4096], longline[4096];
    snprintf(badtag, sizeof badtag, "%s", tt_test_path("badtag.txt"));
    char *text = tt_xmalloc((1 << 20) + 16);
    memset(text, 'a', (1 << 20) + 5);
    memcpy(text, "a x\n", 4);
    text[(1 << 20) + 5] = '\0';
    put("long.txt", text);
    free(text);
    snprintf(longline, sizeof longline, "%s", tt_test_path("long.txt"));
    const bad cases[] = {
        {{"frobnicate", tag_ck}, "unknown command"},
        {{"predict"}, "no checkpoint"},
        {{"predict", "/nonexistent.safetensors", "a"}, "/nonexistent.safetensors"},
        {{"predict", notck, "a"}, "valid.txt"},
        {{"predict", dump, "a"}, "a checkpoint written by ./train"},
        {{"generate", tag_ck, "a x"}, "task lm"},
        {{"generate", lm_ck, ""}, "no words"},
        {{"generate", lm_ck, "one", "two"}, "one prompt"},
        {{"generate", lm_ck, "one", "--temperature", "-1"}, "--temperature"},
        {{"generate", lm_ck, "one", "--words", "0"}, "--words"},
        {{"generate", lm_ck, "one", "--top-k", "x"}, "--top-k"},
        {{"predict", mlm_ck, "one two"}, "[MASK]"},
        {{"predict", tag_ck}, "at least one sentence"},
        {{"predict", tag_ck, "a", "--file", notck}, "one or the other"},
        {{"predict", tag_ck, "--file", "/nonexistent.txt"}, "/nonexistent.txt"},
        {{"maps", tag_ck, "a x", "--layer", "2"}, "2 layers"},
        {{"maps", tag_ck, "a x", "--head", "-1"}, "--head"},
        {{"eval", tag_ck}, "one data file"},
        {{"eval", tag_ck, badtag}, "badtag.txt:1"},
        {{"eval", tag_ck, "/nonexistent.txt"}, "/nonexistent.txt"},
        {{"predict", tag_ck, "a", "--device", "tpu"}, "device"},
        {{"predict", tag_ck, "a", "--bogus", "1"}, "--bogus"},
        /* bounded reads: a NUL byte or a line over 1 MiB ends at once */
        {{"predict", tag_ck, "--file", "/dev/zero"}, "/dev/zero:1: a NUL byte"},
        {{"predict", tag_ck, "--file", "/dev/urandom"}, "/dev/urandom:"},
        {{"predict", tag_ck, "--file", longline}, "long.txt:2: a line longer than 1 MiB"},
        {{"eval", tag_ck, "/dev/zero"}, "/dev/zero:1: a NUL byte at offset 0"},
        {{"eval", tag_ck, "/dev/urandom"}, "/dev/urandom:"},
        /* not a checkpoint, said so */
        {{"predict", cfg, "a"}, "tag.json is a config, not a checkpoint"},
        {{"predict", tt_test_tmpdir(), "a"}, "is a folder, not a checkpoint"},
        {{"predict", badtag, "a"}, "badtag.txt is a text file, not a checkpoint"},
        {{"generate", lm_ck, "one", "--words", "1001"}, "--words 1001: allowed: 1 to 1000"},
        /* a control character in a path: escaped, not sent to the terminal */
        {{"predict", "/nonexistent\x1b[31m.safetensors", "a"}, "/nonexistent\\x1b[31m.safe"},
        /* a usage error: its message and a short usage */
        {{"predict", tag_ck}, "checkpoint\nusage: ./infer maps|predict|generate|eval"},
        {{"maps"}, "more: ./infer --help\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad *c = &cases[i];
        const char *a[8] = {0};
        for (int k = 0; k < 8; k++) a[k] = c->args[k];
        int rc = call(tt_infer_main, out, msg, LEN, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                      a[7]);
        ck_assert_msg(rc == 2, "case %zu (%s %s): exit %d, want 2; %s", i, a[0], a[2] ? a[2] : "",
                      rc, msg);
        ck_assert_msg(strstr(msg, c->want), "case %zu: the message lacks \"%s\": %s", i, c->want,
                      msg);
        /* /dev/urandom's first lines may be short valid text whose unknown words are read as
         * [UNK], each with its warning line, before the line that stops the run */
        const char *m = msg;
        if (strstr(a[2] ? a[2] : "", "urandom") || strstr(a[3] ? a[3] : "", "urandom"))
            while (!strncmp(m, "warning: ", 9) && strchr(m, '\n')) m = strchr(m, '\n') + 1;
        const char *second = strstr(m + 1, "infer: ");
        ck_assert_msg(!strncmp(m, "infer: ", 7) && !second, "case %zu: not one message: %s",
                      i, msg);
        int lines = 0;
        for (const char *p = m; *p; p++) lines += *p == '\n';
        ck_assert_msg(lines <= 3, "case %zu: %d lines: %s", i, lines, msg);
    }
    ck_assert_int_eq(call(tt_infer_main, out, msg, LEN, NULL), 2);
    ck_assert_msg(!strcmp(msg, "infer: no command given\nusage: ./infer maps|predict|generate|"
                          "eval CHECKPOINT ARGUMENTS... [OPTIONS]\nmore: ./infer --help\n"),
                  "%s", msg);
    /* a config as a checkpoint: the same message from ./train --resume, with a hint */
    ck_assert_int_eq(call(tt_train_main, out, msg, LEN, cfg, "--resume", cfg, NULL), 2);
    ck_assert_msg(strstr(msg, "tag.json is a config, not a checkpoint") &&
                  strstr(msg, "\nHINT: "), "%s", msg);
    ck_assert_int_eq(call(tt_train_main, out, msg, LEN, cfg, "--bogus", NULL), 2);
    ck_assert_msg(strstr(msg, "\nmore: ./train --help\n") && !strstr(msg, "--dump-first-step "
                  "FILE  "), "%s", msg);
    /* --device cuda: runs (a CUDA build on a GPU) or says why in the option's words */
    int rc = call(tt_infer_main, out, msg, LEN, "predict", tag_ck, "a", "--device", "cuda",
                  NULL);
    ck_assert_msg(rc == 0 || (rc == 2 && strstr(msg, "infer: --device cuda: ") &&
                              strstr(msg, "HINT: --device cpu") && !strstr(msg, "--set")),
                  "exit %d: %s", rc, msg);
}
END_TEST

Suite *infer_suite(void)
{
    Suite *s = suite_create("infer");
    TCase *tc = tcase_create("infer");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, tt_tmp_teardown);
    tcase_add_test(tc, test_eval_equals_trainer);
    tcase_add_test(tc, test_predict_agrees_with_eval);
    tcase_add_test(tc, test_maps_equal_probe_maps);
    tcase_add_test(tc, test_causal_rows);
    tcase_add_test(tc, test_generate);
    tcase_add_test(tc, test_predict_mlm);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_spelling);
    tcase_add_test(tc, test_input_edges);
    suite_add_tcase(s, tc);
    return s;
}
