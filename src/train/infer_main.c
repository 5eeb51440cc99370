/* infer_main.c: ./infer, the program that uses a trained checkpoint (use/infer.c). */
#include "train/infer.h"
#include "train/run/budget.h"

int main(int argc, char **argv)
{
    tt_mem_reexec_for_rlimit(argv); /* under RLIMIT_AS: OpenBLAS with one thread of its own */
    return tt_infer_main(argc, argv);
}
