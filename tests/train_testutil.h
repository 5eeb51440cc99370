/* train_testutil.h: what the suites that drive ./train (and ./infer) in process share
 * (test_train.c, test_runs.c, test_infer.c): running them with their output captured, a small
 * tagging corpus in the test's folder, and metrics.jsonl read back. */
#ifndef TT_TRAIN_TESTUTIL_H
#define TT_TRAIN_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>

/* Writes text to the test's folder (tt_test_path(name)); fails the test on an error. */
void tt_test_put(const char *name, const char *text);
/* train.txt (84 lines) and valid.txt (12) in the test's folder: "a x p a<TAB>D V N V", where
 * the tag of "x" is decided by the word before it; the first words are a, b, c, d. */
void tt_test_tag_corpus(void);
/* The same with `fourth` in place of d (./infer's tests use a Korean word there). */
void tt_test_tag_corpus_with(const char *fourth);
/* A fixture's start: a fresh test folder (tt_tmp_setup), the tag corpus in it, and cfg.json
 * written from config_fmt, whose one %s is the folder. */
void tt_test_setup_tag_run(const char *config_fmt);
/* "output.dir=TMP/name" for --set (TMP the test's folder), in one of 4 static buffers used in
 * turn: valid until the fourth call after. */
const char *tt_test_output_dir(const char *name);
/* A program's main (tt_train_main, tt_infer_main) in process with the arguments in ap
 * (NULL-terminated; argv[0] is supplied): stdout into out (len bytes; NULL: /dev/null), stderr
 * into message (len bytes); returns the exit status. */
int tt_test_main(int (*main_fn)(int, char **), char *out, char *message, size_t len,
                 va_list ap);
/* ./train with the arguments (NULL-terminated), stdout to /dev/null and stderr into message
 * (len bytes); returns the exit status. */
int tt_test_train(char *message, size_t len, ...);
/* The lines of a metrics.jsonl from the first whose epoch is >= from, without the
 * tokens_per_s field (a timing); malloc'ed. */
char *tt_test_metrics(const char *path, int from);
/* The data a viewer (RUN/attention/index.html at path) embeds, parsed; cJSON_Delete it. */
struct cJSON *tt_test_viewer_data(const char *path);
/* a and b are the same text; else fails naming the label and the first line that differs. */
void tt_test_same_lines(const char *label, const char *a, const char *b);

/* Everything under a folder: each entry's relative name and a file's bytes, in name order, so
 * two snapshots are equal (n and buf) exactly when nothing in the folder changed. */
typedef struct tt_test_snap {
    char *buf; /* free() it */
    size_t n, cap;
    char empty[3000]; /* the first empty file or folder met, else "" */
} tt_test_snap;
/* Adds root/rel (rel "" for root itself) to s. */
void tt_test_snapshot(tt_test_snap *s, const char *root, const char *rel);
/* Fails, naming label and root, when a snapshot of root now differs from before. */
void tt_test_snap_unchanged(const char *label, const tt_test_snap *before, const char *root);

#endif
