/* main.c: ./train (see train/loop.c); the one main() of the project's program. */
#include "train/trainer.h"

int main(int argc, char **argv) { return tt_train_main(argc, argv); }
