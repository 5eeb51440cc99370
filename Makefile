# Tiny Transformer: one Makefile.
#   make               the libraries (float32 and float64) under build/
#   make test          installs missing packages (make deps), builds and runs every Check suite
#   make DEBUG=1 test  the same at -O0 with AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench         builds and runs the benchmarks in bench/ (make bench-step: the step one)
#   make deps          installs the Debian packages the build and tests need (as root)
#   make clean
# The library is compiled twice from the same sources: float32 (training) and float64
# (-DTT_DOUBLE, for the gradient checks), so the checked code is the trained code.

CC      ?= cc
DEBUG   ?= 0
PKGS    := openblas check libcjson

ifeq ($(DEBUG),1)
  BUILD   ?= build/debug
  OPT     := -O0 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
  LDSAN   := -fsanitize=address,undefined
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
           -Werror
# Lazy (=) on purpose: pkg-config is only asked once `make deps` has had a chance to install it.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS))
CFLAGS_ALL = -std=c11 -D_POSIX_C_SOURCE=200809L -pthread $(OPT) $(WARN) -Isrc -MMD -MP $(PKG_CFLAGS)
LDLIBS_ALL = $(LDSAN) $(PKG_LIBS) -lm -pthread

# src/train/main.c is the program's main(); everything else is library (the tests drive the
# program through tt_train_main, in process).
LIB_SRC   := $(filter-out src/train/main.c,\
               $(wildcard src/tensor/*.c src/tensor/cpu/*.c src/autograd/*.c src/nn/*.c \
                          src/train/*/*.c src/train/*.c))
TEST_SRC  := $(wildcard tests/*.c)
BENCH_SRC := $(wildcard bench/*.c)

obj = $(patsubst %.c,$(BUILD)/$(1)/%.o,$(2))

LIB32 := $(BUILD)/libtt_f32.a
LIB64 := $(BUILD)/libtt_f64.a
CHECK32 := $(BUILD)/check_f32
CHECK64 := $(BUILD)/check_f64
BENCH_MATMUL := $(BUILD)/bench_matmul
BENCH_STEP := $(BUILD)/bench_step
# ./train at the repository root (DESIGN.md section 6); other builds keep theirs in BUILD.
ifeq ($(BUILD),build)
  TRAIN := train
else
  TRAIN := $(BUILD)/train
endif

.PHONY: all test bench bench-step deps deps-ok clean run
all: deps-ok
	@$(MAKE) --no-print-directory libs $(TRAIN)

# The first command on a fresh clone: packages, build, then train the tiny config.
run: deps-ok
	@$(MAKE) --no-print-directory $(TRAIN)
	./$(TRAIN) configs/tiny.json

.PHONY: libs runners
libs: $(LIB32) $(LIB64)
runners: $(CHECK32) $(CHECK64)

# Objects depend on the Makefile: a change of flags rebuilds them.
$(BUILD)/f32/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	@echo "  CC   $@"
	@$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/f64/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	@echo "  CC   $@"
	@$(CC) $(CFLAGS_ALL) -DTT_DOUBLE -c $< -o $@

$(LIB32): $(call obj,f32,$(LIB_SRC))
	@rm -f $@
	@echo "  AR   $@"
	@ar rcs $@ $^

$(LIB64): $(call obj,f64,$(LIB_SRC))
	@rm -f $@
	@echo "  AR   $@"
	@ar rcs $@ $^

$(CHECK32): $(call obj,f32,$(TEST_SRC)) $(LIB32)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

$(CHECK64): $(call obj,f64,$(TEST_SRC)) $(LIB64)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

$(TRAIN): $(call obj,f32,src/train/main.c) $(LIB32)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

$(BENCH_MATMUL): $(call obj,f32,bench/bench_matmul.c) $(LIB32)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

$(BENCH_STEP): $(call obj,f32,bench/bench_step.c) $(LIB32)
	@echo "  LD   $@"
	@$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

# The float32 runner checks kernels against references and the graph machinery; the float64
# runner adds the finite-difference gradient checks. Each prints Check's summary per suite.
# Then one epoch of the tiny config, and its attention viewer (index.html) opened in headless
# Chromium: any JavaScript error fails; the screenshot is kept (skipped without Chromium).
VIEW_CHECK := $(BUILD)/view_check
test: deps-ok
	@$(MAKE) --no-print-directory runners $(TRAIN)
	@$(MAKE) --no-print-directory header-check
	$(CHECK32)
	$(CHECK64)
	@rm -rf $(VIEW_CHECK)
	./$(TRAIN) configs/tiny.json --set train.epochs=1 --set output.dir=$(VIEW_CHECK) >/dev/null
	scripts/check_html.sh $(VIEW_CHECK)/attention/index.html $(VIEW_CHECK)/screenshot.png

# header-check: the headers a CUDA file includes compile as C++ with C linkage, and philox.h
# in a __global__ kernel when nvcc is there (tests/cxx/check.sh; either part is skipped with a
# line when its compiler is absent). Only this target calls nvcc, never the default one.
NVCC ?= nvcc
.PHONY: header-check
header-check:
	@tests/cxx/check.sh $(CXX) $(NVCC)

# bench: the matmul op, then a full training step against PyTorch (bench/README.md).
bench: deps-ok
	@$(MAKE) --no-print-directory $(BENCH_MATMUL) $(BENCH_STEP)
	$(BENCH_MATMUL)
	bench/run_step_bench.sh $(BENCH_STEP)

bench-step: deps-ok
	@$(MAKE) --no-print-directory $(BENCH_STEP)
	bench/run_step_bench.sh $(BENCH_STEP)

deps:
	@scripts/deps.sh install

# Quiet when everything is there; otherwise installs (root) or fails with the apt-get line.
deps-ok:
	@scripts/deps.sh ensure

clean:
	rm -rf build train

-include $(shell find build -name '*.d' 2>/dev/null)
