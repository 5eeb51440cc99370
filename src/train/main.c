/* main.c: ./train, the one main() of the project's program (the command line is cli.c); with
 * MPI=1 it starts and ends the process's part in a data-parallel run (train/run/dist.h). */
#include "train/cli.h"
#include "train/run/blas_env.h"
#include "train/run/dist.h"

int main(int argc, char **argv)
{
    tt_blas_env(argv); /* OpenBLAS's kernels and threads, before its first call */
    tt_dist_init(&argc, &argv);
    int rc = tt_train_main(argc, argv);
    tt_dist_finalize();
    return rc;
}
