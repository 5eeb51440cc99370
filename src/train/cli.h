/* cli.h: ./train's command line (cli.c). tt_train_main is main(): the tests call it in
 * process. Returns the exit status: 0 done, 2 a mistake in the user's input (after one
 * message on stderr). */
#ifndef TT_CLI_H
#define TT_CLI_H

#include "train/run/run.h"

int tt_train_main(int argc, char **argv);

/* For the tests: the hooks (train/run/run.h) that tt_train_main gives the runs it starts from
 * now on (NULL: none), e.g. to deliver a signal at a precise step. */
void tt_train_test_hooks(tt_step_hook on_step, tt_step_hook on_stop, void *ctx);

#endif
