/* blas_core.c: which OpenBLAS kernel set suits this CPU when OpenBLAS itself does not know the
 * CPU. OpenBLAS (DYNAMIC_ARCH, Debian's build) names a kernel set for the CPU when it loads,
 * from a table of the CPU models it knows; a model newer than that OpenBLAS gets a set chosen
 * by a few features, often far below what the CPU runs (Prescott's SSE3 kernels on an Intel
 * Xeon with AVX-512; Haswell's AVX2 ones on an AMD Zen 5 with AVX-512: about half the sgemm
 * rate). The choice here ranks OpenBLAS's x86-64 core names by the widest vector unit their
 * kernels use and names the best one this CPU and its OS support, when it ranks above the
 * one OpenBLAS picked. OpenBLAS reads the choice from OPENBLAS_CORETYPE when it loads, so the
 * program acts on it by running itself again (train/run/blas_env.c). The kernels' own run-time
 * checks of AVX2 + FMA and AVX-512F are here too, below. */
#include "tensor/cpu/cpu.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

/* OpenBLAS's x86-64 core names (its gotoblas_corename) by the widest kernels they run:
 * 3 AVX-512, 2 AVX2 with FMA, 1 AVX, 0 SSE only; a name not in the table: -1. */
static int rank_of(const char *core)
{
    static const struct {
        const char *name;
        int rank;
    } cores[] = {
        {"SkylakeX", 3},    {"Cooperlake", 3}, {"SapphireRapids", 3}, {"Haswell", 2},
        {"Zen", 2},         {"Excavator", 2},  {"Sandybridge", 1},    {"Bulldozer", 1},
        {"Piledriver", 1},  {"Steamroller", 1}, {"Prescott", 0},      {"Core2", 0},
        {"Penryn", 0},      {"Dunnington", 0}, {"Nehalem", 0},        {"Atom", 0},
        {"Opteron", 0},     {"Opteron(SSE3)", 0}, {"Barcelona", 0},   {"Bobcat", 0},
        {"Katmai", 0},      {"Coppermine", 0}, {"Northwood", 0},      {"Banias", 0},
    };
    for (size_t i = 0; core && i < sizeof cores / sizeof cores[0]; i++)
        if (!strcmp(cores[i].name, core)) return cores[i].rank;
    return -1;
}

const char *tt_blas_core_better(const tt_cpu_isa *isa, const char *picked)
{
    int have = rank_of(picked);
    if (have < 0) return NULL; /* not an x86-64 name this table knows: left as it is */
    const char *best = NULL;
    int rank = -1;
    if (isa->avx512f && isa->avx512bw && isa->avx512dq && isa->avx512vl && isa->avx512cd)
        best = "SkylakeX", rank = 3;
    else if (isa->avx2 && isa->fma)
        best = "Haswell", rank = 2;
    else if (isa->avx)
        best = "Sandybridge", rank = 1;
    return rank > have ? best : NULL;
}

/* GCC's and clang's __builtin_cpu_supports reads cpuid and, for AVX and AVX-512, whether the
 * OS saves those registers (xgetbv): a feature the OS does not enable reads as absent. */
void tt_cpu_isa_read(tt_cpu_isa *isa)
{
    *isa = (tt_cpu_isa){0};
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    isa->avx = __builtin_cpu_supports("avx");
    isa->avx2 = __builtin_cpu_supports("avx2");
    isa->fma = __builtin_cpu_supports("fma");
    isa->avx512f = __builtin_cpu_supports("avx512f");
    isa->avx512bw = __builtin_cpu_supports("avx512bw");
    isa->avx512dq = __builtin_cpu_supports("avx512dq");
    isa->avx512vl = __builtin_cpu_supports("avx512vl");
    isa->avx512cd = __builtin_cpu_supports("avx512cd");
    unsigned a, b, c, d; /* GCC 12's __builtin_cpu_supports has no name for PREFETCHW */
    isa->prefetchw = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8));
#endif
}

/* The kernels' checks, read once from tt_cpu_isa_read into two bits (racy but idempotent:
 * every thread stores the same answer). */
enum { HAVE_AVX2_FMA = 1, HAVE_AVX512F = 2, HAVE_PREFETCHW = 4 };

static int have(int bit)
{
    static int bits = -1;
    if (bits < 0) {
        tt_cpu_isa isa;
        tt_cpu_isa_read(&isa);
        bits = (isa.avx2 && isa.fma ? HAVE_AVX2_FMA : 0) | (isa.avx512f ? HAVE_AVX512F : 0) |
               (isa.prefetchw ? HAVE_PREFETCHW : 0);
    }
    return bits & bit;
}

bool tt_cpu_have_avx2_fma(void) { return have(HAVE_AVX2_FMA); }

bool tt_cpu_have_avx512f(void) { return have(HAVE_AVX512F); }

bool tt_cpu_have_prefetchw(void) { return have(HAVE_PREFETCHW); }
