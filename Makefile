# The one entry point for people and CI: `make run`, `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
CRATE := benchfs_native
DEB_PACKAGES := fio fuse3 sysstat libucx-dev ucx-utils clang libclang-dev pkg-config \
	openmpi-bin libopenmpi-dev mpich iproute2 iputils-ping e2fsprogs util-linux rsync \
	slurmctld slurmd slurm-client munge autoconf automake libtool postgresql chromium
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

.PHONY: help system venv build examples hpc-tools setup lint fmt test test-rust test-python run bench fuzz fuzz-ci cargo-fuzz clean

help:
	@echo "make run    install everything, then run benchfs on the local default cluster"
	@echo "make test   install everything, then lint and run every test (cargo and pytest)"
	@echo "make bench  side-by-side benchmarks (engine vs fio); see docs/PERFORMANCE.md"
	@echo "make examples  build the UCX examples that benchfs bench rpc runs (am_pingpong, core_to_core)"
	@echo "make lint   cargo fmt/clippy, the engine's module rules, ruff, mypy, import rules, stubtest"
	@echo "make test HPC_TOOLS_SRC=DIR  the same, with IOR, mdtest and io500 built from the sources in DIR"
	@echo "make fuzz   10^6 inputs into each decoder a peer reaches (libFuzzer; FUZZ_TOOLCHAIN=+nightly adds ASan)"

# Debian packages the engine and the tools need (as root; skipped when present).
system:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:" $$missing; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi
	@command -v cargo >/dev/null || { echo "error: cargo (Rust >= 1.85) is required" >&2; exit 2; }

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

venv: $(PY)

# Builds the extension (release) and installs benchfs, analysis, benchfs_native.
# mpi4py's MPICH module asks for libmpi.so.12, which Debian's MPICH names
# libmpich.so.12: a link under that name, found by ranks MPICH's mpiexec starts
# (benchfs/launchers/mpirun.py). Not in $(VENV)/lib itself: mpi4py looks there
# first and would take MPICH for OpenMPI runs too.
build: system venv
	$(PY) -m pip install -q ".[dev]"
	@for lib in /usr/lib/*/libmpich.so.12; do [ -e "$$lib" ] || continue; \
		mkdir -p $(VENV)/lib/mpich && ln -sfn "$$lib" $(VENV)/lib/mpich/libmpi.so.12; done

setup: build

# The UCX binding's example programs `benchfs bench rpc` runs beside ucx_perftest.
examples: system
	cargo build --release --manifest-path $(CRATE)/Cargo.toml -p benchfs-ucx \
		--example am_pingpong --example core_to_core

fmt:
	cargo fmt --manifest-path $(CRATE)/Cargo.toml --all
	$(BIN)/ruff format benchfs analysis benchfs_native/python tests benchmarks
	$(BIN)/ruff check --fix benchfs analysis benchfs_native/python tests benchmarks

# The engine's module rules (which layer may use which) are a cargo test:
# benchfs_native/tests/layers/.
lint: build
	cargo fmt --manifest-path $(CRATE)/Cargo.toml --all --check
	cargo clippy --manifest-path $(CRATE)/Cargo.toml --workspace --all-targets --all-features -- -D warnings
	cargo test --manifest-path $(CRATE)/Cargo.toml --test layers --quiet
	$(BIN)/ruff check benchfs analysis benchfs_native/python tests benchmarks
	$(BIN)/ruff format --check benchfs analysis benchfs_native/python tests benchmarks
	$(BIN)/mypy
	PYTHONPATH=. $(BIN)/lint-imports
	cd /tmp && $(abspath $(PY)) -m mypy.stubtest benchfs_native

# IOR, mdtest and io500 for the tests that run them, where their sources are
# at hand: HPC_TOOLS_SRC names a directory holding build-hpc-tools.sh and the
# tarballs it builds (IOR/mdtest, io500, pfind). They are built once per set
# of sources into HPC_TOOLS_DIR, outside the checkout: with Open MPI's mpicc
# for IOR_BIN_DIR and IO500_BIN_DIR, and with MPICH's for IOR_MPICH_BIN_DIR.
# A test that needs one of them then fails instead of skipping
# (BENCHFS_TESTS_REQUIRE_TOOLS, tests/conftest.py). Without HPC_TOOLS_SRC
# nothing changes: the tests look on PATH, in $$IOR_BIN_DIR, in /opt/ior/bin.
HPC_TOOLS_SRC ?=
HPC_TOOLS_DIR ?= $(HOME)/.cache/benchfs/hpc-tools
ifneq ($(HPC_TOOLS_SRC),)
HPC_TOOLS_BUILT := $(HPC_TOOLS_DIR)/$(shell cat $(HPC_TOOLS_SRC)/build-hpc-tools.sh $(HPC_TOOLS_SRC)/*.tar.gz | sha256sum | cut -c1-12)
export IOR_BIN_DIR := $(HPC_TOOLS_BUILT)/openmpi/bin
export IO500_BIN_DIR := $(HPC_TOOLS_BUILT)/openmpi/bin
export IOR_MPICH_BIN_DIR := $(HPC_TOOLS_BUILT)/mpich/bin
export BENCHFS_TESTS_REQUIRE_TOOLS := 1
endif

hpc-tools: system
ifneq ($(HPC_TOOLS_SRC),)
	@if [ -x "$(IOR_MPICH_BIN_DIR)/mdtest" ]; then echo "IOR, mdtest and io500: $(HPC_TOOLS_BUILT)"; else \
		echo "building IOR, mdtest and io500 from $(HPC_TOOLS_SRC) into $(HPC_TOOLS_BUILT)"; \
		rm -rf "$(HPC_TOOLS_BUILT).part" && mkdir -p "$(HPC_TOOLS_BUILT).part/mpicc" && \
		"$(HPC_TOOLS_SRC)/build-hpc-tools.sh" "$(HPC_TOOLS_BUILT).part/openmpi" && \
		ln -s "$$(command -v mpicc.mpich)" "$(HPC_TOOLS_BUILT).part/mpicc/mpicc" && \
		PATH="$(HPC_TOOLS_BUILT).part/mpicc:$$PATH" \
			"$(HPC_TOOLS_SRC)/build-hpc-tools.sh" "$(HPC_TOOLS_BUILT).part/mpich" && \
		rm -rf "$(HPC_TOOLS_BUILT)" && mv "$(HPC_TOOLS_BUILT).part" "$(HPC_TOOLS_BUILT)"; fi
endif

# Tests that need root are ignored (with the reason) otherwise; as root they run too.
test-rust: system
	cargo test --manifest-path $(CRATE)/Cargo.toml --workspace
	if [ "$$(id -u)" = 0 ]; then \
		cargo test --manifest-path $(CRATE)/Cargo.toml --test engine_root -- --ignored; fi

test-python: build examples hpc-tools
	$(BIN)/pytest

test: lint test-rust test-python

# The main job on the embedded local cluster; the last line names the results directory.
run: build
	$(BIN)/benchfs run

bench: build examples
	$(BIN)/benchfs bench storage

# Coverage-guided fuzzing of the wire and session decoders (docs/RELIABILITY.md),
# with cargo-fuzz (installed from crates.io when missing). The stable toolchain
# builds libFuzzer's instrumentation with RUSTC_BOOTSTRAP and no sanitizer
# (panics, aborts, hangs and leaks of the decoders are found; they are safe
# Rust); `make fuzz FUZZ_TOOLCHAIN=+nightly FUZZ_SANITIZER=address` adds
# AddressSanitizer where nightly is installed. CI runs `fuzz-ci`: fewer
# inputs from a fixed seed, so that any crash it finds is found again.
FUZZ_TARGETS := wire_decode session_decode
FUZZ_RUNS ?= 1000000
FUZZ_SEED ?= 0
FUZZ_TOOLCHAIN ?= +stable
FUZZ_SANITIZER ?= none
cargo-fuzz:
	@command -v cargo-fuzz >/dev/null || cargo install --locked -q cargo-fuzz

fuzz: cargo-fuzz
	cd $(CRATE)/fuzz && for t in $(FUZZ_TARGETS); do \
		RUSTC_BOOTSTRAP=1 cargo $(FUZZ_TOOLCHAIN) fuzz run $$t -s $(FUZZ_SANITIZER) -O -- \
			-runs=$(FUZZ_RUNS) -seed=$(FUZZ_SEED) -max_len=4200 -print_final_stats=1 || exit 1; done

fuzz-ci:
	$(MAKE) fuzz FUZZ_RUNS=200000 FUZZ_SEED=1

clean:
	rm -rf $(VENV) $(CRATE)/target results .pytest_cache .mypy_cache .ruff_cache
