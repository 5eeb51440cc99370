# bench/mpi.mk: issue 16's all-reduce benchmark (bench/allreduce.c), a fragment the Makefile
# includes. `make bench-allreduce [NP=2] [ALLREDUCE_ARGS="--time 0.5 --max 16777216"]` builds
# build/mpi/bench_allreduce with mpicc and runs it on NP ranks of this machine: --oversubscribe
# lets NP exceed the cores, --allow-run-as-root lets CI's root run it. The program uses MPI and
# libc only (not the project's library), so it needs neither `make` nor MPI=1 first.
MPICC  ?= mpicc
MPIRUN ?= mpirun
NP     ?= 2
BENCH_ALLREDUCE := build/mpi/bench_allreduce
MPI_HINT := HINT: apt-get install openmpi-bin libopenmpi-dev (Debian), or make deps as root

.PHONY: bench-allreduce
bench-allreduce: $(BENCH_ALLREDUCE)
	@command -v $(MPIRUN) >/dev/null 2>&1 || { echo "bench-allreduce: $(MPIRUN) not found, \
	Open MPI's launcher. $(MPI_HINT)" >&2; exit 2; }
	$(MPIRUN) --oversubscribe --allow-run-as-root -np $(NP) $(BENCH_ALLREDUCE) $(ALLREDUCE_ARGS)

$(BENCH_ALLREDUCE): bench/allreduce.c bench/mpi.mk
	@command -v $(MPICC) >/dev/null 2>&1 || { echo "bench-allreduce: $(MPICC) not found, \
	Open MPI's compiler wrapper. $(MPI_HINT)" >&2; exit 2; }
	@mkdir -p $(dir $@)
	$(MPICC) -std=c11 -O2 -Wall -Wextra -Werror -o $@ bench/allreduce.c
