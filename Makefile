# Makefile: the entry points a person types. CMake does the building.
#   make demo   build, then walk the MIG lifecycle on an emulated A100-SXM4-40GB
#   make check  every test: a short fuzz run, the ASan+UBSan build, then the
#               plain build (its ctest summary is the last line)
#   make fuzz   build the libFuzzer targets and run each for FUZZ_SECONDS
BUILD ?= build
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 30
CHECK_FUZZ_SECONDS ?= 15

.PHONY: all deps build demo check test test-sanitize fuzz clean
all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@GPUSLICE=$(BUILD)/gpuslice scripts/demo.sh

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-sanitize: deps
	@cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DGS_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD)-asan -j $(JOBS)
	@cd $(BUILD)-asan && ctest --output-on-failure -j $(JOBS)

check:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS)
	@$(MAKE) --no-print-directory test-sanitize
	@$(MAKE) --no-print-directory test

fuzz:
	@GS_WITH_CLANG=1 scripts/deps.sh
	@CC=clang cmake -S . -B $(BUILD)-fuzz -DCMAKE_BUILD_TYPE=Debug -DGS_FUZZ=ON -DGS_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD)-fuzz -j $(JOBS)
	@scripts/fuzz.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz
