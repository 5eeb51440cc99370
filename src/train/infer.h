/* infer.h: ./infer's command line (use/infer.c). tt_infer_main is its main(): the tests call
 * it in process. Returns the exit status: 0 done, 2 a mistake in the user's input (after one
 * message on stderr). */
#ifndef TT_INFER_H
#define TT_INFER_H

int tt_infer_main(int argc, char **argv);

#endif
