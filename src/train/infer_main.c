/* infer_main.c: ./infer, the program that uses a trained checkpoint (use/infer.c). */
#include "train/infer.h"

int main(int argc, char **argv) { return tt_infer_main(argc, argv); }
