/* blas_env.c: OpenBLAS's environment, set before OpenBLAS matters. OpenBLAS reads
 * OPENBLAS_CORETYPE and OPENBLAS_NUM_THREADS once, when it loads (before main), so a change
 * means running the program again, through /proc/self/exe, once (TT_BLAS_REEXEC marks it
 * done). Two reasons to: a kernel set better than the one OpenBLAS picked for a CPU it does
 * not know (tensor/cpu/blas_core.c), and a finite RLIMIT_AS (budget.c). */
#include "train/run/blas_env.h"

#include "tensor/cpu/cpu.h"
#include "train/run/budget.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the line after the re-exec, once per run: rank 0's alone under mpirun */
static void say_choice(void)
{
    const char *picked = getenv("TT_BLAS_PICKED"), *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!picked || (rank && strcmp(rank, "0"))) return;
    fprintf(stderr, "blas: OpenBLAS picked its %s kernels for this CPU, which it does not know; "
            "running %s instead (to keep OpenBLAS's pick: TT_BLAS_AUTO=0, or set "
            "OPENBLAS_CORETYPE yourself)\n", picked, openblas_get_corename());
}

const char *tt_blas_env_picked(void)
{
    return getenv("TT_BLAS_REEXEC") ? getenv("TT_BLAS_PICKED") : NULL;
}

void tt_blas_env(char **argv)
{
    if (getenv("TT_BLAS_REEXEC")) {
        say_choice();
        return;
    }
    bool again = tt_mem_env_for_rlimit();
    const char *off = getenv("TT_BLAS_AUTO");
    if (!getenv("OPENBLAS_CORETYPE") && !(off && !strcmp(off, "0"))) {
        tt_cpu_isa isa;
        tt_cpu_isa_read(&isa);
        const char *picked = openblas_get_corename();
        const char *better = tt_blas_core_better(&isa, picked);
        if (better && !setenv("OPENBLAS_CORETYPE", better, 1) &&
            !setenv("TT_BLAS_PICKED", picked, 1))
            again = true;
    }
    if (!again || setenv("TT_BLAS_REEXEC", "1", 1)) return;
    fflush(NULL);
    execv("/proc/self/exe", argv);
    /* exec failed: this process goes on, its OpenBLAS as loaded */
}
