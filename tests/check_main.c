/* check_main.c: the one test runner. Each suite runs in its own SRunner so Check prints a
 * summary line per suite (the list: suites.h); the exit status is non-zero if any test failed.
 * Usage: check_f32|check_f64 [SUITE]  (or CK_RUN_SUITE / CK_RUN_CASE, and CK_FORK=no for gdb)
 * The CUDA suite (make CUDA=1) runs last and without fork: CUDA is undefined after fork. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        Suite *(*make)(void);
    } suites[] = {
#define TT_SUITE_ENTRY(name, what) {#name, name##_suite},
        TT_SUITES(TT_SUITE_ENTRY)
#ifdef TT_DOUBLE
        TT_SUITES_F64(TT_SUITE_ENTRY)
#else
        TT_SUITES_F32(TT_SUITE_ENTRY)
#endif
#ifdef TT_WITH_CUDA
        TT_SUITES_CUDA(TT_SUITE_ENTRY)
#endif
    };
    int failed = 0, ran = 0, matched = 0;
    if (tt_test_tmp_init()) return EXIT_FAILURE; /* the temporary folders' root (testutil.h) */
    printf("tiny-transformer tests, %s build\n", TT_REAL_NAME);
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
        if (argc > 1 && strcmp(argv[1], suites[i].name) != 0) continue;
        matched++;
        SRunner *sr = srunner_create(suites[i].make());
#ifdef TT_WITH_CUDA
        if (suites[i].make == cuda_suite) srunner_set_fork_status(sr, CK_NOFORK);
#endif
        srunner_run_all(sr, CK_NORMAL);
        failed += srunner_ntests_failed(sr);
        ran += srunner_ntests_run(sr);
        srunner_free(sr);
    }
    if (!matched) { /* a name that is no suite (of this build) */
        fprintf(stderr, "check: no suite \"%s\" in this build; the suites:", argv[1]);
        for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
            fprintf(stderr, " %s", suites[i].name);
        fprintf(stderr, "\n");
    }
    printf("%s build: %d tests run, %d failed\n", TT_REAL_NAME, ran, failed);
    return failed || !ran ? EXIT_FAILURE : EXIT_SUCCESS;
}
