/* infer_main.c: ./infer, the program that uses a trained checkpoint (use/infer.c). */
#include "train/infer.h"
#include "train/run/blas_env.h"

int main(int argc, char **argv)
{
    tt_blas_env(argv); /* OpenBLAS's kernels and threads, before its first call */
    return tt_infer_main(argc, argv);
}
