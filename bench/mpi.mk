# bench/mpi.mk: issue 16's all-reduce benchmark (bench/allreduce.c), a fragment the Makefile
# includes. `make bench-allreduce [NP=2] [ALLREDUCE_ARGS="--time 0.5 --max 16777216"]` builds
# build/mpi/bench_allreduce with mpicc and runs it on NP ranks of this machine: --oversubscribe
# lets NP exceed the cores, --allow-run-as-root lets CI's root run it. The program uses MPI and
# libc only (not the project's library), so it needs neither `make` nor MPI=1 first.
MPICC  ?= mpicc
MPIRUN ?= mpirun
NP     ?= 2
# copy-in/copy-out between local ranks: the kernel's cross-memory attach (Open MPI's default)
# is slower on this VM and refused in some containers; the tests and dp_step.sh use the same
MPIRUN_FLAGS ?= --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none
BENCH_ALLREDUCE := build/mpi/bench_allreduce
MPI_HINT := HINT: scripts/deps.sh mpi (as root), or apt-get install openmpi-bin libopenmpi-dev

.PHONY: bench-allreduce
bench-allreduce: $(BENCH_ALLREDUCE)
	@command -v $(MPIRUN) >/dev/null 2>&1 || { echo "bench-allreduce: $(MPIRUN) not found, \
	Open MPI's launcher. $(MPI_HINT)" >&2; exit 2; }
	$(MPIRUN) $(MPIRUN_FLAGS) -np $(NP) $(BENCH_ALLREDUCE) $(ALLREDUCE_ARGS)

$(BENCH_ALLREDUCE): bench/allreduce.c bench/mpi.mk
	@command -v $(MPICC) >/dev/null 2>&1 || { echo "bench-allreduce: $(MPICC) not found, \
	Open MPI's compiler wrapper. $(MPI_HINT)" >&2; exit 2; }
	@mkdir -p $(dir $@)
	$(MPICC) -std=c11 -O2 -Wall -Wextra -Werror -o $@ bench/allreduce.c

# make bench-dp [CONFIGS="tiny small"]: the data-parallel step (bench/dp_step.sh) at 1 rank x 1
# thread, 1 x 2 and 2 ranks x 1 thread, with the MPI build's bench_step (built here with MPI=1).
.PHONY: bench-dp
bench-dp:
	@+$(SUBMAKE) MPI=1 build/mpi/bench_step
	bench/dp_step.sh build/mpi/bench_step $(if $(CONFIGS),--configs "$(CONFIGS)")
