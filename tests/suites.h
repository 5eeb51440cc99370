/* suites.h: every Check suite, once, in the order the runner (check_main.c) runs them: its
 * name (the runner's argument: build/check_f32 NAME; the suite is NAME_suite() of
 * tests/test_*.c) and one line of what it tests. The runner's table and the declarations
 * (testutil.h) are made from these lists, so a new suite is one line here. Four lists by the
 * builds a suite is in: every build, float64 only, float32 only, CUDA builds only. */
#ifndef TT_SUITES_H
#define TT_SUITES_H

#define TT_SUITES(X)                                                                            \
    X(tensor, "shapes, tensor views, the step arena, the counter-based RNG and Philox")       \
    X(heap, "the gradient heap and its use by the graph")                                       \
    X(gemm, "the batched strided gemm, the head and causal gemms, the memory functions")        \
    X(kernels, "the elementwise, activation, softmax, LayerNorm and embedding kernels")         \
    X(kernel_math, "tensor/kernel_math.h, the math the CPU and CUDA share")                     \
    X(gelu, "tensor/erf_f32.h, the GELU kernels, fused with dropout")                           \
    X(dropout_loss, "the dropout kernels and the fused cross-entropy and sum")                  \
    X(autograd, "the tape: accumulation, no-grad mode, aborts, hand-worked values")             \
    X(safetensors, "the safetensors writer, through the reader and without it")                 \
    X(safetensors_read, "the safetensors reader on hand-built bytes, every validation error")   \
    X(attention, "the fused scaled dot-product attention")                                      \
    X(attention_ref, "the fused attention against naive loops in double")                       \
    X(nn, "layers and the model")                                                               \
    X(parity, "the model against PyTorch's fixtures")                                           \
    X(config, "config loading and validation")                                                  \
    X(config_errors, "every mistake a config can hold, one message each")                       \
    X(optim, "optimizers, schedules, clipping")                                                 \
    X(data, "tokenizer, corpora, batches")                                                      \
    X(train, "the program end to end")                                                          \
    X(infer, "./infer: using a checkpoint")                                                     \
    X(runs, "run folders, resume and schedules, valid_share, progress")                         \
    X(ckpt, "checkpoints as user input: values, sizes, the config")                             \
    X(render, "attention maps: files, SVG, HTML, terminal")                                     \
    X(plot, "line plots and a run's loss.svg")                                                  \
    X(study, "the 1/sqrt(d_k) scaling study's measurements")                                    \
    X(worked, "the worked examples of the Korean notes the project began from, recomputed")     \
    X(threads, "the CPU thread pool: the same bits for any thread count")                       \
    X(guard, "the device boundary: the guard device, and ./train on it")                        \
    X(memory_plan, "the step-memory plan against real steps")                                   \
    X(budget, "the memory check before a run: needs, limits, refusals")                         \
    X(faults, "signals, kills, full disks: what a run survives")                                \
    X(dist, "data parallel: batch shares; ./train under mpirun (MPI=1)")
#define TT_SUITES_F64(X)                                                                        \
    X(gradcheck, "every differentiable op against central differences")
#define TT_SUITES_F32(X) X(bench, "bench_step as a user runs it (a float32 program)")
#define TT_SUITES_CUDA(X) X(cuda, "every CUDA kernel against the CPU's (make CUDA=1)")

#endif
