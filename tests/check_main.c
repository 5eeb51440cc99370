/* check_main.c: the one test runner. Each suite runs in its own SRunner so Check prints a
 * summary line per suite; the exit status is non-zero if any test failed.
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
        {"tensor", tensor_suite},
        {"heap", heap_suite},
        {"gemm", gemm_suite},
        {"kernels", kernels_suite},
        {"kernel_math", kernel_math_suite},
        {"gelu", gelu_suite},
        {"dropout_loss", dropout_loss_suite},
        {"autograd", autograd_suite},
        {"safetensors", safetensors_suite},
        {"safetensors_read", safetensors_read_suite},
        {"attention", attention_suite},
        {"attention_ref", attention_ref_suite},
        {"nn", nn_suite},
        {"parity", parity_suite},
        {"config", config_suite},
        {"config_errors", config_errors_suite},
        {"optim", optim_suite},
        {"data", data_suite},
        {"train", train_suite},
        {"infer", infer_suite},
        {"runs", runs_suite},
        {"ckpt", ckpt_suite},
        {"render", render_suite},
        {"plot", plot_suite},
        {"study", study_suite},
        {"worked", worked_suite},
        {"threads", threads_suite},
        {"guard", guard_suite},
        {"memory_plan", memory_plan_suite},
        {"budget", budget_suite},
        {"faults", faults_suite},
        {"dist", dist_suite},
#ifdef TT_DOUBLE
        {"gradcheck", gradcheck_suite},
#else
        {"bench", bench_suite}, /* bench_step is a float32 program */
#endif
#ifdef TT_WITH_CUDA
        {"cuda", cuda_suite},
#endif
    };
    int failed = 0, ran = 0;
    if (tt_test_tmp_init()) return EXIT_FAILURE; /* the temporary folders' root (testutil.h) */
    printf("tiny-transformer tests, %s build\n", TT_REAL_NAME);
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
        if (argc > 1 && strcmp(argv[1], suites[i].name) != 0) continue;
        SRunner *sr = srunner_create(suites[i].make());
#ifdef TT_WITH_CUDA
        if (suites[i].make == cuda_suite) srunner_set_fork_status(sr, CK_NOFORK);
#endif
        srunner_run_all(sr, CK_NORMAL);
        failed += srunner_ntests_failed(sr);
        ran += srunner_ntests_run(sr);
        srunner_free(sr);
    }
    printf("%s build: %d tests run, %d failed\n", TT_REAL_NAME, ran, failed);
    return failed || !ran ? EXIT_FAILURE : EXIT_SUCCESS;
}
