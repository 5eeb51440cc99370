/* cli.h: ./train's command line (cli.c). tt_train_main is main(): the tests call it in
 * process. Returns the exit status: 0 done, 2 a mistake in the user's input (after one
 * message on stderr). */
#ifndef TT_CLI_H
#define TT_CLI_H

int tt_train_main(int argc, char **argv);

#endif
