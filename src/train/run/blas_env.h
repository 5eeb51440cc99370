/* blas_env.h: OpenBLAS's kernel set and thread count chosen before the program uses it. */
#ifndef TT_BLAS_ENV_H
#define TT_BLAS_ENV_H

/* Called first in main() (./train, ./infer, the bench programs). When OPENBLAS_CORETYPE is not
 * set and OpenBLAS picked a kernel set below what this CPU runs (an unknown, newer CPU), or
 * RLIMIT_AS is finite (budget.h), the program runs itself again with OpenBLAS's variables set,
 * and then says its choice in one line on stderr. TT_BLAS_AUTO=0 keeps OpenBLAS's pick.
 * Returns when nothing is to be done (or after the re-exec), or when exec fails. */
void tt_blas_env(char **argv);
/* The core OpenBLAS picked before tt_blas_env chose another (NULL: OpenBLAS's pick runs). */
const char *tt_blas_env_picked(void);

#endif
