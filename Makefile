# Tiny Transformer: one Makefile.
#   make               the libraries (float32 and float64) under build/, ./train, ./infer
#   make run           the first command on a fresh clone: packages, ./train and ./infer, then
#                      the tiny config's training run into runs/tiny
#   make test          installs missing packages (make deps), builds and runs every Check suite
#   make DEBUG=1 test  the same at -O1 with AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench         builds and runs the benchmarks in bench/ (make bench-step: the step one;
#                      CONFIG=FILE.json: that config's training step against PyTorch's)
#   make CUDA=1 bench-gpu  on a GPU machine: the step against PyTorch eager and torch.compile,
#                      tiny small medium base at matmul precision highest and high (~7 min)
#   make CUDA=1 bench-attention  the fused CUDA attention against cuBLAS + softmax (a GPU)
#   make docs          the marked figures of README.md, docs/*.md and tests/README.md (the
#                      config reference and the suite list included) and the pictures, from
#                      fresh runs and the code
#   make docs-check    fails when a figure or picture differs from this build's (make test's
#                      last step)
#   make header-check  the headers a CUDA file includes compile as C++ (and under nvcc)
#   make check-layers  src/'s include rules: floors tensor < autograd < nn < train, no CUDA
#                      header above src/tensor, no circle of modules (part of make test)
#   make CUDA=1 ptxas  every kernel's registers and spills from ptxas (nvcc, no GPU needed)
#   make CUDA=1 ...    the same targets with the CUDA backend (nvcc, cuBLAS), under build/cuda
#   make CUDA_EMU=1 test-emu  the CUDA backend's code on an emulated GPU (no GPU needed): its
#                      CUDA suite, under build/cuda-emu (tests/cuda_emu); with DEBUG=1 under
#                      UBSan alone, build/cuda-emu-debug
#   make MPI=1 ...     the same with ./train data parallel over processes (Open MPI; with
#                      CUDA=1 also NCCL), under build/mpi: mpirun -np N ./train CONFIG
#   make deps          installs the Debian packages the build and tests need (as root)
#   make WERROR=0 ...  warnings stay warnings (a compiler newer than the gcc 12 the code is
#                      held to may warn where it did not; the default 1 makes them errors)
#   make clean
#   make help          this list
# The library is compiled twice from the same sources: float32 (training) and float64
# (-DTT_DOUBLE, for the gradient checks), so the checked code is the trained code.

CC      ?= cc
NPROC   := $(shell nproc 2>/dev/null || echo 1)
DEBUG   ?= 0
CUDA    ?= 0
WERROR  ?= 1
ERR_1   := -Werror
PKGS    := openblas check libcjson

# make MPI=1: ./train data-parallel over processes (mpirun -np N ./train CONFIG; dist.c):
# TT_WITH_MPI defined, Open MPI's compile and link flags (from mpicc, its wrapper), objects under
# build/mpi (build/mpi-cuda with CUDA=1, which adds NCCL for the GPUs' gradients). Without MPI=1
# the build and the program are the plain ones.
MPI     ?= 0
ifeq ($(MPI),1)
  MPICC_SHOW := $(shell mpicc --showme:compile 2>/dev/null)
  ifeq ($(MPICC_SHOW),)
    $(error make MPI=1 needs Open MPI (mpicc, mpirun) and none was found. HINT: \
      scripts/deps.sh mpi (as root) installs it: apt-get install openmpi-bin libopenmpi-dev)
  endif
  MPI_DEF  := -DTT_WITH_MPI $(patsubst -I%,-isystem %,$(MPICC_SHOW))
  MPI_LIBS := $(shell mpicc --showme:link)
  BUILD ?= build/mpi$(if $(filter 1,$(CUDA)),-cuda)$(if $(filter 1,$(DEBUG)),-debug)
endif

# make CUDA=1: src/tensor/cuda/*.cu compiled by nvcc into both libraries (float32, float64),
# cuBLAS and the CUDA runtime linked, TT_CUDA defined for the C sources; objects under their
# own BUILD so that they never mix with the CPU build's. Without CUDA=1 nothing below is used
# and nvcc is never asked for.
ifeq ($(CUDA),1)
  NVCC ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
  ifeq ($(NVCC),)
    $(error make CUDA=1 needs nvcc, the CUDA Toolkit's compiler, and none was found. HINT: put \
      the toolkit's bin/ on PATH (e.g. /usr/local/cuda/bin) or pass NVCC=/path/to/nvcc; plain \
      `make` builds the CPU program without it)
  endif
  # CUDA_HOME: the folder above nvcc's bin/ (through links, where that has no headers)
  nvcc_home  = $(patsubst %/bin/nvcc,%,$(1))
  CUDA_HOME ?= $(firstword $(foreach n,$(NVCC) $(realpath $(NVCC)),$(if $(wildcard \
                 $(call nvcc_home,$(n))/include/cuda_runtime_api.h),$(call nvcc_home,$(n)))) \
                 $(call nvcc_home,$(NVCC)))
  ifeq ($(DEBUG),1)
    BUILD ?= build/cuda-debug
  else
    BUILD ?= build/cuda
  endif
  # sm_80 (A100) and sm_90 (H100, H200) binaries, and sm_90 PTX for newer GPUs to compile.
  GENCODE := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
  NV_ERR_1 := -Werror all-warnings -Xcompiler -Werror
  # --threads 4: a file's four steps (cicc for compute_80 and _90, ptxas for sm_80 and _90) side
  # by side, where there are cores to spare. attention_mma.cu's float32 build is one file of 28
  # and, on many cores, the one the build ends waiting for (62 s of 100 here under make -j2;
  # alone 52 s, 26 s with threads; the GPU machine's build step waits for it). On 2 cores, with
  # make -j2, the threads cost more than they gave (1m35 -> 1m52): 8 cores or more only. The
  # objects' code and ptxas's reports are the same either way.
  NVCC_THREADS ?= $(if $(filter-out 1 2 3 4 5 6 7,$(NPROC)),--threads 4)
  NVFLAGS  = -std=c++20 -O3 -g -lineinfo $(GENCODE) $(NVCC_THREADS) -DTT_WITH_CUDA -Isrc -MMD -MP \
             -Xcompiler -Wall,-Wextra $(NV_ERR_$(WERROR))
  CUDA_DEF  := -DTT_WITH_CUDA -I$(CUDA_HOME)/include
  # The toolkit's libraries: lib64/ in NVIDIA's installers, lib/, targets/<arch>/lib/ or
  # lib/<triplet>/ in some packagings (the first that holds libcudart); a library with no plain
  # libX.so there (wheels ship libX.so.N) is linked by its versioned file.
  LIB_DIRS  := lib64 lib targets/x86_64-linux/lib lib/x86_64-linux-gnu
  lib_so    = $(firstword $(wildcard $(addprefix $(1)/,$(addprefix lib$(2),.so .so.[0-9]*))))
  lib_in    = $(firstword $(foreach d,$(addprefix $(1)/,$(LIB_DIRS)),$(call lib_so,$(d),$(2))))
  CUDA_LIBDIR := $(patsubst %/,%,$(dir $(or $(call lib_in,$(CUDA_HOME),cudart), \
                   $(CUDA_HOME)/lib64/libcudart.so)))
  cuda_lib  = $(if $(wildcard $(CUDA_LIBDIR)/lib$(1).so),-l$(1),$(or $(call \
                lib_so,$(CUDA_LIBDIR),$(1)),-l$(1)))
  CUDA_LIBS := -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) $(call cuda_lib,cublas) \
               $(call cuda_lib,cublasLt) $(call cuda_lib,cudart) -lstdc++
  # NCCL sums the GPUs' gradients of a data-parallel run (dist.c), and TT_NCCL=1 checks that
  # path on one GPU. NCCL_HOME's copy where given (include/nccl.h, lib*/libnccl.so*), else the
  # toolkit's, else the system's (libnccl-dev: /usr, which the compiler and linker search
  # already), else the one PyTorch's wheels bring (site-packages/nvidia/*/); a build without
  # it still trains on one GPU and refuses cuda over ranks.
  NVIDIA_WHEELS = $(shell python3 -c 'import nvidia; print(*nvidia.__path__)' 2>/dev/null)
  nccl_in   = $(and $(call lib_in,$(1),nccl),$(wildcard $(1)/include/nccl.h))
  nccl_any  = $(firstword $(foreach d,$(1),$(if $(call nccl_in,$(d)),$(d))))
  NCCL_HOME ?= $(or $(call nccl_any,$(CUDA_HOME) /usr),$(call nccl_any,$(patsubst \
                 %/include/nccl.h,%,$(wildcard $(addsuffix /*/include/nccl.h,$(NVIDIA_WHEELS))))))
  NCCL_SO   := $(if $(call nccl_in,$(NCCL_HOME)),$(call lib_in,$(NCCL_HOME),nccl))
  ifneq ($(NCCL_SO),)
    CUDA_DEF  += -DTT_WITH_NCCL \
                 $(if $(filter /usr $(CUDA_HOME),$(NCCL_HOME)),,-I$(NCCL_HOME)/include)
    CUDA_LIBS += $(NCCL_SO) $(if $(filter /usr,$(NCCL_HOME)),,-Wl,-rpath,$(dir $(NCCL_SO)))
  endif
  CU_SRC    := $(wildcard src/tensor/cuda/*.cu)
endif

# make CUDA_EMU=1 ...: the CUDA build on a machine without a GPU, for its logic: every
# src/tensor/cuda/*.cu rewritten by tests/cuda_emu/prep.py (launches become calls) and compiled
# by g++ against the emulated CUDA runtime and cuBLAS of tests/cuda_emu/ (include/cuda_runtime.h
# says what that proves and what it does not), objects under build/cuda-emu. `make CUDA_EMU=1
# test-emu` runs the CUDA suite and a short training run there.
CUDA_EMU ?= 0
ifeq ($(CUDA_EMU),1)
  ifeq ($(CUDA),1)
    $(error CUDA=1 and CUDA_EMU=1 are two builds of the CUDA backend: pick one)
  endif
  # DEBUG=1: UndefinedBehaviorSanitizer alone (ASan does not follow the emulator's fiber
  # stacks), at -O2: the kernels' index arithmetic and conversions checked
  BUILD     ?= build/cuda-emu$(if $(filter 1,$(DEBUG)),-debug)
  CU_SRC    := $(wildcard src/tensor/cuda/*.cu) tests/cuda_emu/emu.cc
  # TT_CUDA_EMULATED: the emulated cuda_runtime.h defines it for the .cu files; the C tests,
  # which do not include it, get it here (test_cuda.c: what only a real GPU can answer)
  CUDA_DEF  := -DTT_WITH_CUDA -DTT_CUDA_EMULATED=1 -Itests/cuda_emu/include
  CUDA_LIBS := -lstdc++
  # -Wno-psabi: g++'s note that a 32-byte aligned argument (float64's real4, by value) is
  # passed as since GCC 4.6; no such call crosses to code built by another compiler
  EMU_FLAGS  = -std=c++20 $(OPT) -ffp-contract=off -Wall -Wextra $(ERR_$(WERROR)) \
               -Wno-unknown-pragmas -Wno-sign-compare -Wno-psabi -DTT_WITH_CUDA -Isrc \
               -Itests/cuda_emu/include $(PKG_CFLAGS) -MMD -MP
endif

ifeq ($(DEBUG),1)
  BUILD   ?= build/debug
  # -O1, not -O0: the suites run twice as fast under the sanitizers (CI's 25 minutes), and
  # ASan's own docs advise it; float-cast-overflow, which gcc leaves out of "undefined", checks
  # that a double fits the int it is converted to (the kind of bug clang's fuzzers found in
  # config_json.c; that one, a conversion whose result went unused, gcc does not flag)
  SAN     := -fsanitize=address,undefined,float-cast-overflow
  OPT     := -O1 -g $(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
  ifeq ($(CUDA_EMU),1)
    SAN   := -fsanitize=undefined,float-cast-overflow
    OPT   := -O2 -g $(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
  endif
  LDSAN   := $(SAN)
else
  BUILD   ?= build
  # -fno-trapping-math: we never unmask floating-point traps, so GCC may compute both sides of
  # a select (keep ? x * s : 0, x > m ? x : m) and vectorise the loop. -fno-math-errno: no
  # code reads errno after libm, so sqrt becomes one instruction (AdamW's loop vectorises).
  # Neither changes a value, and no flag that changes values is used.
  OPT     := -O3 -g -fno-trapping-math -fno-math-errno
  LDSAN   :=
endif

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wdouble-promotion \
           -Wpointer-arith \
           $(ERR_$(WERROR))
# Lazy (=) on purpose: pkg-config is only asked once `make deps` has had a chance to install it.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS))
CFLAGS_BASE = -std=c11 -ffp-contract=off -D_POSIX_C_SOURCE=200809L -pthread $(OPT) $(WARN) -Isrc \
              -MMD -MP $(PKG_CFLAGS)
CFLAGS_ALL  = $(CFLAGS_BASE) $(CUDA_DEF) $(MPI_DEF)
LDLIBS_ALL = $(LDSAN) $(PKG_LIBS) $(CUDA_LIBS) $(MPI_LIBS) -lm -pthread

# src/train/main.c and infer_main.c are the programs' main(); everything else is library (the
# tests drive the programs through tt_train_main and tt_infer_main, in process).
MAIN_SRC  := src/train/main.c src/train/infer_main.c
LIB_SRC   := $(filter-out $(MAIN_SRC),\
               $(wildcard src/tensor/*.c src/tensor/cpu/*.c src/tensor/guard/*.c src/autograd/*.c \
                          src/nn/*.c src/train/*/*.c src/train/*.c))
TEST_SRC  := $(wildcard tests/*.c)
BENCH_SRC := $(wildcard bench/*.c)

# Objects shared between builds. The CUDA, emulated-GPU and MPI builds differ from the plain
# one only in the C files that test their macros (TT_WITH_CUDA, TT_WITH_MPI, TT_WITH_NCCL,
# TT_CUDA_EMULATED) or include a CUDA, MPI or NCCL header: VARIANT_SRC, found by grep. Those
# they compile under their own BUILD; every other C object is the plain build's of the same
# DEBUG (SHARED: build/ or build/debug/), compiled with the plain flags, the same bits whichever
# build asks for it. So `make CUDA=1` after `make` compiles a dozen C files where it compiled
# 240 (50 s of CI's two cores each for the CUDA, emulated and MPI builds). The emulated build
# under DEBUG=1 has flags of its own (UBSan alone, -O2) and shares nothing. A header that tested
# one of those macros would change, unseen by the grep, every file that includes it: a variant
# build refuses one (src/tensor/cuda/'s headers aside: only .cu files and VARIANT_SRC include
# them, the grep's second half). A BUILD given on the command line shares nothing.
ALL_C_SRC   := $(LIB_SRC) $(MAIN_SRC) $(TEST_SRC) $(BENCH_SRC) scripts/docs_figures.c
VARIANT_RE  := TT_WITH_(CUDA|MPI|NCCL)|TT_CUDA_EMULATED
SHARED      := $(BUILD)
ifneq ($(filter 1,$(CUDA) $(CUDA_EMU) $(MPI)),)
  ifeq ($(origin BUILD),file)
    ifneq ($(filter 1,$(CUDA_EMU))$(filter 1,$(DEBUG)),11)
      SHARED := build$(if $(filter 1,$(DEBUG)),/debug)
    endif
  endif
  VARIANT_INC := ^\s*\#\s*include\s*[<"](tensor/cuda/|cuda|cublas|mpi\.h|nccl)
  VARIANT_SRC := $(shell grep -lE '$(VARIANT_RE)|$(VARIANT_INC)' $(ALL_C_SRC))
  VARIANT_HDR := $(shell grep -lE '^\s*\#.*($(VARIANT_RE))' $(filter-out src/tensor/cuda/%,\
                   $(wildcard src/*.h src/*/*.h src/*/*/*.h tests/*.h bench/*.h)))
  ifneq ($(VARIANT_HDR),)
    $(error $(VARIANT_HDR): a header tests a build's macro ($(VARIANT_RE)), so the files that \
      include it would differ between builds where the Makefile shares their objects. HINT: \
      test it in the .c files (they are then compiled per build: VARIANT_SRC))
  endif
endif
SHARED_SRC  := $(if $(filter $(SHARED),$(BUILD)),,$(filter-out $(VARIANT_SRC),$(ALL_C_SRC)))

# obj,PRECISION,SOURCES: the objects of the sources (a shared source's under SHARED)
obj = $(patsubst %.cc,$(BUILD)/$(1)/%.o,$(patsubst %.cu,$(BUILD)/$(1)/%.o,$(patsubst \
        %.c,$(BUILD)/$(1)/%.o,$(filter-out $(SHARED_SRC),$(2))))) \
      $(patsubst %.c,$(SHARED)/$(1)/%.o,$(filter $(SHARED_SRC),$(2)))

LIB32 := $(BUILD)/libtt_f32.a
LIB64 := $(BUILD)/libtt_f64.a
CHECK32 := $(BUILD)/check_f32
CHECK64 := $(BUILD)/check_f64
DOCS_FIGURES := $(BUILD)/docs_figures
BENCH_MATMUL := $(BUILD)/bench_matmul
BENCH_STEP := $(BUILD)/bench_step
# ./train at the repository root (docs/design.md section 2), from the CPU or the CUDA build; other
# builds keep theirs in BUILD. A stamp names the variant ./train was last linked as, so that
# switching between `make` and `make CUDA=1` relinks it.
# ./infer (a checkpoint's maps, predictions, generation, evaluation) sits beside it, linked the
# same way.
ifneq ($(filter $(BUILD),build build/cuda build/mpi build/mpi-cuda),)
  TRAIN := train
  INFER := infer
  TRAIN_STAMP := build/.train-$(if $(filter 1,$(MPI)),mpi-)$(if $(filter 1,$(CUDA)),cuda,cpu)
else
  TRAIN := $(BUILD)/train
  INFER := $(BUILD)/infer
endif

# The targets that build on their own (make test, run, bench, ...) do it on every core unless
# make was given -j (then its jobserver is shared): on CI's two cores `make test` compiled
# its 240 objects one at a time. (NPROC: near the top, where the CUDA flags use it too.) Its
# lines begin with +: make hands its jobserver only to lines it knows recurse, and it does not
# see $(MAKE) inside another variable ("jobserver unavailable: using -j1", which made CI's
# make -j2 fuzz build its objects one at a time).
SUBMAKE  = $(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))

.PHONY: all test test-emu bench bench-step bench-attention bench-gpu deps deps-ok clean run
# One dependency graph, no recursion: `make -j2 all runners` builds each object once. Every
# object waits for deps-ok (order-only: it never makes an object out of date), so pkg-config
# is asked for flags only after the packages are there.
all: libs $(TRAIN) $(INFER)

# The first command on a fresh clone: packages, build (./train and ./infer, which the README
# uses next), then train the tiny config. Its demo run replaces the one before it in runs/tiny
# (--overwrite), so `make run` works again and again.
run: deps-ok
	@+$(SUBMAKE) $(TRAIN) $(INFER)
	./$(TRAIN) configs/tiny.json --overwrite

# make help: the targets, as this file's opening comment lists them (the one list of them)
.PHONY: help
help:
	@sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' $(firstword $(MAKEFILE_LIST))

.PHONY: libs runners
libs: $(LIB32) $(LIB64)
# the bench suite runs bench_step (a float32 program) as a user does: built with the runners,
# and with CUDA=1 bench_attention too (scripts/gpu_check.sh's attention step runs it)
runners: $(CHECK32) $(CHECK64) $(BENCH_STEP) $(if $(filter 1,$(CUDA)),$(BUILD)/bench_attention)

# Objects depend on the Makefile: a change of flags rebuilds them. cc_obj,FLAGS[,MORE]: a C
# object compiled with the named variable's flags, then MORE (float64's -DTT_DOUBLE).
cc_obj = @mkdir -p $(dir $@); echo "  CC   $@"; $(CC) $($(1)) $(2) -c $< -o $@

$(BUILD)/f32/%.o: %.c Makefile | deps-ok
	$(call cc_obj,CFLAGS_ALL)

$(BUILD)/f64/%.o: %.c Makefile | deps-ok
	$(call cc_obj,CFLAGS_ALL,-DTT_DOUBLE)

ifneq ($(SHARED_SRC),)
$(SHARED)/f32/%.o: %.c Makefile | deps-ok
	$(call cc_obj,CFLAGS_BASE)

$(SHARED)/f64/%.o: %.c Makefile | deps-ok
	$(call cc_obj,CFLAGS_BASE,-DTT_DOUBLE)
endif

ifeq ($(CUDA_EMU),1)
$(BUILD)/f32/%.o: %.cu Makefile tests/cuda_emu/prep.py | deps-ok
	@mkdir -p $(dir $@)
	@echo "  EMU  $@"
	@python3 tests/cuda_emu/prep.py $< >$(@:.o=.emu.cc)
	@$(CXX) $(EMU_FLAGS) -c $(@:.o=.emu.cc) -o $@

$(BUILD)/f64/%.o: %.cu Makefile tests/cuda_emu/prep.py | deps-ok
	@mkdir -p $(dir $@)
	@echo "  EMU  $@"
	@python3 tests/cuda_emu/prep.py $< >$(@:.o=.emu.cc)
	@$(CXX) $(EMU_FLAGS) -DTT_DOUBLE -c $(@:.o=.emu.cc) -o $@

$(BUILD)/f32/%.o: %.cc Makefile | deps-ok
	@mkdir -p $(dir $@)
	@echo "  CXX  $@"
	@$(CXX) $(EMU_FLAGS) -c $< -o $@

$(BUILD)/f64/%.o: %.cc Makefile | deps-ok
	@mkdir -p $(dir $@)
	@echo "  CXX  $@"
	@$(CXX) $(EMU_FLAGS) -DTT_DOUBLE -c $< -o $@
else
# ptxas's resource report of each object's kernels goes to OBJECT.ptxas, the rest of nvcc's
# output to the terminal: `make CUDA=1 ptxas` and CI's spill check read those files
# (scripts/ptxas_report.sh --build), so the check costs no compile of its own
nvcc_obj = @mkdir -p $(dir $@); echo "  NVCC $@"; \
	$(NVCC) $(NVFLAGS) $(1) -Xptxas -v -c $< -o $@ 2>$@.ptxas; rc=$$?; \
	grep -v -e '^ptxas info' -e 'bytes stack frame' $@.ptxas >&2; exit $$rc

$(BUILD)/f32/%.o: %.cu Makefile | deps-ok
	$(call nvcc_obj,)

$(BUILD)/f64/%.o: %.cu Makefile | deps-ok
	$(call nvcc_obj,-DTT_DOUBLE)
endif

$(LIB32): $(call obj,f32,$(LIB_SRC) $(CU_SRC))
	@rm -f $@
	@echo "  AR   $@"
	@ar rcs $@ $^

$(LIB64): $(call obj,f64,$(LIB_SRC) $(CU_SRC))
	@rm -f $@
	@echo "  AR   $@"
	@ar rcs $@ $^

$(CHECK32): $(call obj,f32,$(TEST_SRC)) $(LIB32)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

$(CHECK64): $(call obj,f64,$(TEST_SRC)) $(LIB64)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

$(TRAIN): $(call obj,f32,src/train/main.c) $(LIB32) $(TRAIN_STAMP)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $(filter-out $(TRAIN_STAMP),$^) $(LDLIBS_ALL)

$(INFER): $(call obj,f32,src/train/infer_main.c) $(LIB32) $(TRAIN_STAMP)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $(filter-out $(TRAIN_STAMP),$^) $(LDLIBS_ALL)

ifdef TRAIN_STAMP
$(TRAIN_STAMP):
	@mkdir -p $(dir $@)
	@rm -f build/.train-*
	@touch $@
endif

$(DOCS_FIGURES): $(call obj,f32,scripts/docs_figures.c) $(LIB32)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

$(BENCH_MATMUL): $(call obj,f32,bench/bench_matmul.c) $(LIB32)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

$(BENCH_STEP): $(call obj,f32,bench/bench_step.c bench/bench_run.c) $(LIB32)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/bench_attention: $(call obj,f32,bench/bench_attention.c) $(LIB32)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

# The attention viewer's files (src/train/report/viewer.*) become C arrays (viewer_assets.h) in
# a generated file, compiled into both libraries. An asset that opens with a comment loses the
# lines up to its first blank one: that header is for readers of the file, not of the page.
# od, awk and sed, since xxd and python may be missing on a fresh machine. make test also
# parses viewer.js when node is installed (skipped quietly otherwise).
VIEWER_ASSETS := $(addprefix src/train/report/,viewer.html viewer.css viewer.js)
VIEWER_C      := $(BUILD)/gen/viewer_assets.c
$(LIB32): $(call obj,f32,$(VIEWER_C))
$(LIB64): $(call obj,f64,$(VIEWER_C))
$(VIEWER_C): $(VIEWER_ASSETS) Makefile
	@mkdir -p $(dir $@)
	@echo "  GEN  $@"
	@set -e; { \
	    echo '/* Generated by the Makefile from src/train/report/viewer.*: do not edit. */'; \
	    echo '#include "train/report/viewer_assets.h"'; \
	    for f in $(VIEWER_ASSETS); do \
	        n=tt_$$(basename $$f | tr . _); \
	        echo "const char $$n[] = {"; \
	        awk 'NR == 1 && /^(\/\*|<!--)/ { h = 1 } h && /^$$/ { h = 0; next } !h' $$f \
	            | od -An -v -tx1 | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	        echo "0x00};"; \
	        echo "const size_t $${n}_len = sizeof $$n - 1;"; \
	    done; } >$@.tmp
	@mv $@.tmp $@

.PHONY: viewer-check
test: viewer-check
viewer-check:
	@if command -v node >/dev/null 2>&1; then node --check src/train/report/viewer.js; fi

# The float32 runner checks kernels against references and the graph machinery; the float64
# runner adds the finite-difference gradient checks. Each prints Check's summary per suite.
# The two run at the same time (scripts/run_jobs.sh, their outputs printed after: each keeps
# one core busy, and on CI's two cores that saves a minute and a half under the sanitizers;
# with half of every test's time limit they still passed that way).
# Then one epoch of the tiny config, and its attention viewer (index.html) opened in headless
# Chromium: any JavaScript error fails; the screenshot is kept (Chromium is installed first when
# missing; skipped, loudly, only when it cannot be).
VIEW_CHECK := $(BUILD)/view_check
test: deps-ok
	@+$(SUBMAKE) runners $(TRAIN) $(INFER)
	@+$(SUBMAKE) header-check
	@+$(SUBMAKE) check-layers
	scripts/run_jobs.sh $(BUILD)/test-logs $(CHECK32) $(CHECK64)
	@rm -rf $(VIEW_CHECK)
	./$(TRAIN) configs/tiny.json --set train.epochs=1 --set output.dir=$(VIEW_CHECK) >/dev/null
	scripts/check_html.sh $(VIEW_CHECK)/attention/index.html $(VIEW_CHECK)/screenshot.png
ifeq ($(DEBUG),0)
	@+$(SUBMAKE) docs-check
endif

# make docs: the marked figures (<!--fig ...-->) of README.md, docs/*.md and tests/README.md
# and their pictures (docs/img/) from fresh runs of the configs they name, and the config
# reference and the suite list from the code (scripts/docs.sh, scripts/docs_figures.c); make
# docs-check (the last step of make test) fails when a page quotes a figure this build does not
# reproduce. The PyTorch figures need python3-torch: without it they are said to be unchecked.
.PHONY: docs docs-check
docs: deps-ok
	@+$(SUBMAKE) $(TRAIN) $(INFER) $(DOCS_FIGURES)
	TT_INFER=./$(INFER) scripts/docs.sh fill $(TRAIN) $(DOCS_FIGURES)

docs-check: deps-ok
	@+$(SUBMAKE) $(TRAIN) $(INFER) $(DOCS_FIGURES)
	TT_INFER=./$(INFER) scripts/docs.sh check $(TRAIN) $(DOCS_FIGURES)

# check-layers: src/'s include rules (scripts/check_layers.sh: floors tensor < autograd < nn <
# train, no CUDA header above src/tensor, no circle of modules), after its own self-test on a
# made-up tree with one violation of each kind
.PHONY: check-layers
check-layers:
	@scripts/check_layers.sh --self-test
	@scripts/check_layers.sh

# header-check: the headers a CUDA file includes compile as C++ with C linkage, and philox.h
# in a __global__ kernel when nvcc is there (tests/cxx/check.sh; either part is skipped with a
# line when its compiler is absent). Only this target calls nvcc, never the default one.
NVCC ?= nvcc
.PHONY: header-check
header-check:
	@tests/cxx/check.sh $(CXX) $(NVCC)

# ptxas (CUDA=1): ptxas's resource report of every kernel, sm_80 and sm_90, float32 and float64
# (registers, stack, spill stores and loads, static shared memory), then the float32 kernels
# that spill (scripts/ptxas_report.sh, from the objects' .ptxas files: it builds what is not
# built); STRICT=1 fails where one does, STRICT=sm_90 where one does at sm_90 (CI's check).
# Needs nvcc, no GPU.
.PHONY: ptxas
ptxas:
	$(if $(filter 1,$(CUDA)),,$(error ptxas reads the CUDA build's kernels. HINT: make CUDA=1 \
	  ptxas))
	@+$(SUBMAKE) $(LIB32) $(LIB64)
	@scripts/ptxas_report.sh --build $(BUILD) $(if $(filter 1,$(STRICT)),--strict,$(if $(STRICT),--strict=$(STRICT)))

# cuda-paths (CUDA=1): the toolkit, libraries and NCCL this build uses, then where the headers
# and libraries it looks for lie on this machine: what to read when make CUDA=1 fails on an
# unfamiliar one (scripts/gpu_check.sh puts it at the head of build.log), and what to pass
# make then (NVCC, CUDA_HOME, NCCL_HOME).
.PHONY: cuda-paths
cuda-paths:
	$(if $(filter 1,$(CUDA)),,$(error cuda-paths names the CUDA build's toolkit. HINT: make \
	  CUDA=1 cuda-paths))
	@echo "NVCC       $(NVCC)"
	@echo "CUDA_HOME  $(CUDA_HOME)"
	@echo "libraries  $(CUDA_LIBS)"
	@echo "NCCL       $(or $(NCCL_SO),none: TT_NCCL=1 and cuda over ranks are refused)"
	@echo "found (cuda_runtime.h, cublas_v2.h, cublasLt.h, nccl.h, libcudart, libcublas," \
	    "libcublasLt, libnccl):"
	@for d in $(sort $(CUDA_HOME) /usr/local/cuda /usr/include /usr/lib/x86_64-linux-gnu \
	    $(NVIDIA_WHEELS)); do [ -d "$$d" ] && find -L "$$d" -maxdepth 4 \( -name \
	    cuda_runtime.h -o -name cublas_v2.h -o -name cublasLt.h -o -name nccl.h -o -name \
	    'libcudart.so*' -o -name 'libcublas.so*' -o -name 'libcublasLt.so*' -o -name \
	    'libnccl.so*' \) 2>/dev/null; done | sort -u | sed 's/^/  /'

# bench: the matmul op, then a full training step against PyTorch, the standard table
# (bench/README.md). make bench CONFIG=FILE.json: only that config's row (the step as ./train
# runs it, no target), CONFIGS="tiny gpt-small": only those rows (names or files); either
# skips bench_matmul. bench-step: the step table alone (CONFIG and CONFIGS too).
BENCH_ROWS = $(strip $(CONFIGS) $(CONFIG))
bench: deps-ok
	@+$(SUBMAKE) $(BENCH_STEP) $(if $(BENCH_ROWS),,$(BENCH_MATMUL))
	$(if $(BENCH_ROWS),,$(BENCH_MATMUL))
	bench/run_step_bench.sh $(BENCH_STEP) $(if $(BENCH_ROWS),--configs "$(BENCH_ROWS)")

bench-step: deps-ok
	@+$(SUBMAKE) $(BENCH_STEP)
	bench/run_step_bench.sh $(BENCH_STEP) $(if $(BENCH_ROWS),--configs "$(BENCH_ROWS)")

# bench-attention (CUDA=1): the fused attention's four arithmetics forward and backward, the
# forward against cuBLAS + softmax (the tests' reference) at matmul precision highest and high,
# on the bench rows' shapes; ROWS="tiny base" for some of them
bench-attention: deps-ok
	$(if $(filter 1,$(CUDA)),,$(error bench-attention times the CUDA kernels. HINT: make CUDA=1 \
	  bench-attention))
	@+$(SUBMAKE) $(BUILD)/bench_attention
	$(BUILD)/bench_attention $(if $(ROWS),--rows "$(ROWS)")

# test-emu (CUDA_EMU=1): the emulator's self-test, then the CUDA suite of both runners on the
# emulated GPU (tests/cuda_emu/: the CUDA build's code run on the CPU, for its logic); its
# training checks are
# `GPU_CHECK_EMU=1 scripts/gpu_check.sh build cuda train dump` (about 10 minutes). Both of the
# emulator's schedules (cuda_emu/emu.cc): float32 with work deferred to the host's waits,
# float64 with every call run at once; the two precisions share the host code they test.
# The emulator is one thread, so the suite runs as three jobs at once (scripts/run_jobs.sh):
# the float32 attention cases, unpacked (the CUDA suite's tag "long") and packed
# ("long-packed"), each a job, and beside them the other float32 cases then the float64 suite.
# A case with neither tag runs in the third job, so none is left out.
EMU_LONG := long long-packed
EMU_JOBS := $(foreach t,$(EMU_LONG),"TT_EMU_SCHEDULE=defer CK_INCLUDE_TAGS=$(t) $(CHECK32) cuda") \
            "TT_EMU_SCHEDULE=defer CK_EXCLUDE_TAGS='$(EMU_LONG)' $(CHECK32) cuda && \
             TT_EMU_SCHEDULE=eager $(CHECK64) cuda"
.PHONY: test-emu
test-emu: deps-ok
	$(if $(filter 1,$(CUDA_EMU)),,$(error test-emu runs the emulated CUDA build. HINT: make \
	  CUDA_EMU=1 test-emu))
	@+$(SUBMAKE) runners $(BUILD)/emu_selftest
	TT_EMU_SCHEDULE=defer $(BUILD)/emu_selftest
	TT_EMU_SCHEDULE=eager $(BUILD)/emu_selftest
	scripts/run_jobs.sh $(BUILD)/test-emu $(EMU_JOBS)

# the emulator's own test (tests/cuda_emu/selftest.cu): what it claims to catch, it catches
$(BUILD)/emu_selftest: $(call obj,f32,tests/cuda_emu/selftest.cu) $(LIB32)
	@echo "  LD   $@"
	@$(CXX) $(OPT) -o $@ $^ $(LDLIBS_ALL)

# bench-gpu (make CUDA=1 bench-gpu, on a GPU machine): issue 12's table, the float32 bench_step
# of the CUDA build against PyTorch eager and torch.compile, tiny small medium base (CONFIGS
# picks rows) at matmul precision highest and high, about 8 minutes on an H100 (bench/README.md;
# GPU_BENCH_ARGS passes options to bench/gpu_bench.sh, e.g. "--compile-rows base").
bench-gpu: $(if $(filter 1,$(CUDA)),deps-ok)
ifeq ($(CUDA),1)
	@+$(SUBMAKE) $(BENCH_STEP)
	bench/gpu_bench.sh $(BENCH_STEP) $(if $(BENCH_ROWS),--configs "$(BENCH_ROWS)") $(GPU_BENCH_ARGS)
else
	@echo "make bench-gpu: the GPU benchmark needs the CUDA build. HINT: make CUDA=1 bench-gpu" \
	     "(a dry run on the CPU: GPU_BENCH_DEVICE=cpu bench/gpu_bench.sh --configs tiny)" >&2
	@exit 2
endif

# make fuzz [FUZZ_TIME=60]: the libFuzzer harnesses of tests/fuzz/ (the config loader, the data
# formats, the tokenizer, the checkpoint readers), each run for FUZZ_TIME seconds, two at a time,
# by scripts/fuzz.sh, which fails on any crash, leak, timeout or sanitizer report and prints a
# table. The library is compiled again by clang with the sanitizers into build/fuzz/ (never
# touching the gcc build); new corpus inputs go to build/fuzz/corpus/, tests/fuzz/ stays as
# committed. make fuzz-build only builds; make fuzz-seeds regenerates the seed checkpoints.
FUZZ_TIME    ?= 60
FUZZ_CC      ?= clang
FUZZ_DIR     := build/fuzz
FUZZ_TARGETS := config data tokenizer checkpoint
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
                -fno-omit-frame-pointer
# The gcc build holds the code to -Werror; clang finds other things to say (it promotes
# INFINITY, a float, in a double initialiser), so here warnings are shown, not fatal.
FUZZ_CFLAGS   = -std=c11 -D_POSIX_C_SOURCE=200809L -pthread -O1 -g $(FUZZ_SAN) \
                -fsanitize=fuzzer-no-link $(filter-out -Werror -Wdouble-promotion,$(WARN)) \
                -Isrc -MMD -MP $(PKG_CFLAGS)
FUZZ_LIB     := $(FUZZ_DIR)/libtt_fuzz.a
FUZZ_BINS    := $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_TARGETS))
# the harnesses' objects are made by a pattern rule: keep them, so nothing relinks for nothing
.SECONDARY: $(patsubst %,$(FUZZ_DIR)/tests/fuzz/fuzz_%.o,$(FUZZ_TARGETS) util)

.PHONY: fuzz fuzz-build fuzz-deps fuzz-seeds
fuzz: fuzz-build
	scripts/fuzz.sh $(FUZZ_TIME) $(FUZZ_TARGETS)

fuzz-build: fuzz-deps
	@+$(SUBMAKE) $(FUZZ_BINS)

fuzz-deps: deps-ok
	@scripts/deps.sh fuzz

fuzz-seeds: fuzz-build
	scripts/fuzz_seeds.sh $(FUZZ_DIR)/fuzz_checkpoint tests/fuzz/checkpoint

$(FUZZ_DIR)/%.o: %.c Makefile | deps-ok
	@mkdir -p $(dir $@)
	@echo "  CC   $@"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_LIB): $(patsubst %.c,$(FUZZ_DIR)/%.o,$(LIB_SRC) $(VIEWER_C))
	@rm -f $@
	@echo "  AR   $@"
	@ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/tests/fuzz/fuzz_%.o $(FUZZ_DIR)/tests/fuzz/fuzz_util.o $(FUZZ_LIB)
	@echo "  LD   $@"
	@$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) -lm -pthread

deps:
	@scripts/deps.sh install
	@scripts/deps.sh fuzz || echo "deps: make fuzz will need clang and libclang-rt-dev (above)"
	@scripts/deps.sh emu || echo "deps: make CUDA_EMU=1 will need g++ and python3 (above)"

# Quiet when everything is there; otherwise installs (root) or fails with the apt-get line.
# CUDA_EMU=1 also needs g++ and python3.
deps-ok:
	@scripts/deps.sh ensure
	$(if $(filter 1,$(CUDA_EMU)),@scripts/deps.sh emu)

clean:
	rm -rf build train infer

# the data-parallel benchmarks: make bench-allreduce, make bench-dp
include bench/mpi.mk

-include $(shell find build -name '*.d' 2>/dev/null)
