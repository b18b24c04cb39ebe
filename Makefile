# The README's two commands are `make demo` and `make test`; each installs what
# it needs on a fresh Debian machine.
SHELL := /bin/bash
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CTEST_JOBS ?= $(JOBS)

.PHONY: all deps k8s configure build asan-build test unit integration e2e bench demo format clean

all: build

deps:
	@hack/install-deps.sh

k8s: deps
	@hack/k8s-binaries.sh >/dev/null

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Unit tests again, built with AddressSanitizer and UndefinedBehaviorSanitizer.
asan-build: deps
	@cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DHYBRIDJOB_SANITIZE=ON \
	  -DHYBRIDJOB_UNIT_TESTS_ONLY=ON -DHYBRIDJOB_BUILD_BENCH=OFF >/dev/null
	@cmake --build $(ASAN_DIR) -j $(JOBS)

test: k8s build asan-build
	@hack/run-tests.sh $(BUILD_DIR) $(ASAN_DIR) $(CTEST_JOBS)

unit: build
	@ctest --test-dir $(BUILD_DIR) -L unit -j $(CTEST_JOBS) --output-on-failure

integration: k8s build
	@ctest --test-dir $(BUILD_DIR) -L integration -j $(CTEST_JOBS) --output-on-failure

e2e: k8s build
	@ctest --test-dir $(BUILD_DIR) -L e2e --output-on-failure

bench: k8s build
	@hack/bench.sh $(BUILD_DIR)

demo: k8s build
	@hack/demo.sh $(BUILD_DIR)

format:
	@git ls-files '*.h' '*.cpp' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR) $(ASAN_DIR)
