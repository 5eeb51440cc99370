/* main.c: ./train, the one main() of the project's program (the command line is cli.c). */
#include "train/cli.h"

int main(int argc, char **argv) { return tt_train_main(argc, argv); }
