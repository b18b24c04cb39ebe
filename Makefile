# The README's two commands are `make demo` and `make test`; each installs what
# it needs on a fresh Debian machine.
SHELL := /bin/bash
BUILD_DIR ?= build
FUZZ_DIR ?= build-fuzz
TSAN_DIR ?= build-tsan
# Seconds each fuzz target runs: in `make test`, and in `make soak`.
FUZZ_SECONDS ?= 60
SOAK_FUZZ_SECONDS ?= 600
# The normal tree is the Release flavour the images ship (deploy/docker): the
# same CMAKE_BUILD_TYPE and optimisation (-O2, the level every benchmark
# measured), so a warning that -Werror makes fatal in an image build fails
# `make test` first.
BUILD_TYPE ?= Release
# Debug information in every tree: line tables only (-g1) keep file:line in
# backtraces and sanitizer reports, and build a third faster than full -g
# (docs/benchmarks.md, "Build time"); the images strip it. DEBUG_INFO=-g for
# variables in gdb.
DEBUG_INFO ?= -g1
OPT_FLAGS := -DCMAKE_CXX_FLAGS_RELEASE="-O2 $(DEBUG_INFO) -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 $(DEBUG_INFO) -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_DEBUG="$(DEBUG_INFO)"
# Unity builds: CMake compiles a target's sources in batches of 8 per compiler
# run, so the heavy headers (JSON, gtest) are parsed and their templates
# instantiated once per batch instead of once per file: half the CPU of a
# fresh build (docs/benchmarks.md, "Build time"). UNITY=OFF compiles file by
# file, which rebuilds less after editing one file.
UNITY ?= ON
OPT_FLAGS += -DCMAKE_UNITY_BUILD=$(UNITY)
# The benchmarks are built by `make build` and `make bench`, not by `make test`;
# the unit tests by `make build`, and by `make test` in its sanitizer tree only.
BENCH ?= ON
UNIT_TESTS ?= ON
# New trees use Ninja: it starts a target's compiles before the libraries it
# links are built, which keeps both cores busy where make's per-target order
# left one idle. A tree configured before keeps its generator.
generator = $(if $(wildcard $(1)/CMakeCache.txt),,-G Ninja)
JOBS ?= $(shell nproc)
CTEST_JOBS ?= $(JOBS)

.PHONY: all deps k8s peers k8s-demo configure build fuzz-configure fuzz-build tsan-build test soak fuzz \
	unit integration \
	e2e fault bench demo demo-build local-up local-down install format clean

all: build

deps:
	@hack/install-deps.sh

k8s: deps
	@hack/k8s-binaries.sh >/dev/null

# Test peers Debian does not package, from the npm registry (an S3 server).
peers: deps
	@hack/test-peers.sh >/dev/null

# What the demo's control plane runs.
k8s-demo: deps
	@hack/k8s-binaries.sh kube-apiserver kube-controller-manager kube-scheduler kubectl >/dev/null

configure: deps
	@cmake -S . -B $(BUILD_DIR) $(call generator,$(BUILD_DIR)) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(OPT_FLAGS) \
	  -DHYBRIDJOB_BUILD_BENCH=$(BENCH) -DHYBRIDJOB_UNIT_TESTS=$(UNIT_TESTS) \
	  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The sanitizer tree of `make test`, built with Clang: every library, the unit
# tests and the libFuzzer targets of test/fuzz/, with AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer's coverage instrumentation. One
# tree for both, so the libraries are compiled once; with assertions on.
# Unoptimised (SANITIZER_OPT) but for the code the fuzz targets run, which is
# -O1 (test/fuzz/CMakeLists.txt): with the sanitizers' instrumentation the
# whole tree took twice as long to build at -O1 (docs/development.md). Every
# library is built, so that Clang checks the shells' locking
# (-Wthread-safety, see include/hybridjob/common/mutex.h).
SANITIZER_OPT ?= -O0
fuzz-configure: deps
	@CXX=clang++ cmake -S . -B $(FUZZ_DIR) $(call generator,$(FUZZ_DIR)) -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS_DEBUG="$(SANITIZER_OPT) $(DEBUG_INFO)" -DCMAKE_UNITY_BUILD=$(UNITY) -DHYBRIDJOB_FUZZ=ON \
	  -DHYBRIDJOB_UNIT_TESTS_ONLY=ON -DHYBRIDJOB_BUILD_BENCH=OFF >/dev/null

fuzz-build: fuzz-configure
	@cmake --build $(FUZZ_DIR) -j $(JOBS)

# Everything but the benchmarks, built with ThreadSanitizer.
tsan-build: deps
	@cmake -S . -B $(TSAN_DIR) $(call generator,$(TSAN_DIR)) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(OPT_FLAGS) -DHYBRIDJOB_TSAN=ON \
	  -DHYBRIDJOB_BUILD_BENCH=OFF >/dev/null
	@cmake --build $(TSAN_DIR) -j $(JOBS)

# Two trees, one after the other: the normal one (GCC, without the unit tests
# and benchmarks) and the sanitizer one (Clang, with the unit tests and
# fuzzers); then the normal tree's integration, e2e and fault tests, and beside
# them, at the lowest CPU priority, the sanitizer tree's unit tests and fuzzers
# (hack/run-tests.sh).
test: BENCH := OFF
test: UNIT_TESTS := OFF
test: k8s peers configure fuzz-configure
	@for tree in $(BUILD_DIR) $(FUZZ_DIR); do \
	  begin=$$SECONDS; cmake --build $$tree -j $(JOBS) || exit 1; \
	  echo "-- build $$tree: $$((SECONDS - begin)) s"; \
	done
	@FUZZ_SECONDS=$(FUZZ_SECONDS) hack/run-tests.sh $(BUILD_DIR) $(FUZZ_DIR) $(CTEST_JOBS)

# Longer: each fuzz target for SOAK_FUZZ_SECONDS, the unit, integration and
# fault tests under ThreadSanitizer, and the load test at full size.
soak: k8s build fuzz-build tsan-build
	@hack/soak.sh $(FUZZ_DIR) $(SOAK_FUZZ_SECONDS) $(TSAN_DIR) $(CTEST_JOBS) $(BUILD_DIR)

fuzz: fuzz-build
	@hack/fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

unit: build
	@ctest --test-dir $(BUILD_DIR) -L unit -j $(CTEST_JOBS) --output-on-failure

integration: k8s build
	@ctest --test-dir $(BUILD_DIR) -L integration -j $(CTEST_JOBS) --output-on-failure

e2e: k8s peers build
	@ctest --test-dir $(BUILD_DIR) -L e2e -j $(CTEST_JOBS) --output-on-failure

fault: k8s build
	@ctest --test-dir $(BUILD_DIR) -L fault -j $(CTEST_JOBS) --output-on-failure

bench: k8s build
	@hack/bench.sh $(BUILD_DIR)

# The demo runs only the three binaries and the kubectl plugin: build those,
# not every test and benchmark (`make build` builds everything).
DEMO_TARGETS := hybridjob-sim gang-scheduler hybridjob-controller kubectl-hybridjob
demo-build: configure
	@echo "demo: building $(DEMO_TARGETS) in $(BUILD_DIR)" >&2
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target $(DEMO_TARGETS)

# One build after the other: run side by side on 2 cores they took no less
# time (docs/benchmarks.md, "First demo").
demo: k8s-demo demo-build
	@hack/demo.sh $(BUILD_DIR)

# The whole system on this machine until `make local-down`, to follow the user
# guide: `eval "$$(make -s local-up)"` builds what it needs, starts it, and
# sets KUBECONFIG and PATH in your shell (hack/local-system.sh).
local-up:
	@$(MAKE) -s --no-print-directory k8s-demo demo-build >&2
	@hack/local-system.sh up --bin $(BUILD_DIR)/bin

local-down:
	@hack/local-system.sh down

# The shipped binaries (the three programs and the kubectl plugin) into
# $(PREFIX)/bin; with kubectl-hybridjob on the PATH, `kubectl hybridjob` works.
PREFIX ?= /usr/local
INSTALL_TARGETS := $(DEMO_TARGETS)
install: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target $(INSTALL_TARGETS)
	@cmake --install $(BUILD_DIR) --prefix $(PREFIX)

format:
	@git ls-files '*.h' '*.cpp' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR) $(FUZZ_DIR) $(TSAN_DIR)
