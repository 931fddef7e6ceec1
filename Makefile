# SPDX-License-Identifier: Apache-2.0
# Makefile: the entry points a person types. CMake does the building.
#   make demo   build, then run the MIG inference study on an emulated A100-SXM4-40GB
#               (scripts/demo.sh, opening with the lifecycle walk of scripts/demo-lifecycle.sh)
#   make check  every test: a short fuzz run, the ASan+UBSan build, the
#               ThreadSanitizer run of the threaded tests, then the plain
#               build (its ctest summary is the last line)
#   make test-tsan  nvml-emu's concurrency test and the proxy's (several loop
#               threads) under ThreadSanitizer
#   make fuzz   build the libFuzzer targets and run each for FUZZ_SECONDS
#   make install    the build, under PREFIX (default /usr/local) and DESTDIR;
#               `make uninstall` removes what it installed (its manifest)
#   make deb    the Debian package, in $(BUILD)-deb/ (scripts/deb.sh)
BUILD ?= build
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
FUZZ_SECONDS ?= 30
CHECK_FUZZ_SECONDS ?= 15

.PHONY: all deps build demo check test test-sanitize test-tsan fuzz install uninstall deb clean
all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

install: build
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD)

uninstall:
	@scripts/uninstall.sh $(BUILD)/install_manifest.txt "$(DESTDIR)"

deb:
	@GS_WITH_DEB=1 scripts/deps.sh
	@scripts/deb.sh $(BUILD)-deb

demo: build
	@GPUSLICE=$(BUILD)/gpuslice scripts/demo.sh

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-sanitize: deps
	@cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DGS_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD)-asan -j $(JOBS)
	@cd $(BUILD)-asan && ctest --output-on-failure -j $(JOBS)

# gcc's -fsanitize=thread (libtsan2); the library and the test share the build.
test-tsan:
	@GS_WITH_TSAN=1 scripts/deps.sh
	@cmake -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=Debug -DGS_TSAN=ON >/dev/null
	@cmake --build $(BUILD)-tsan -j $(JOBS) --target nvml-emu test-nvml-emu-threads test-proxy-stream
	@cd $(BUILD)-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --output-on-failure -R 'nvml-emu-threads|test-proxy-stream'

check:
	@GS_WITH_DEB=1 scripts/deps.sh
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS)
	@$(MAKE) --no-print-directory test-sanitize
	@$(MAKE) --no-print-directory test-tsan
	@$(MAKE) --no-print-directory test

fuzz:
	@GS_WITH_CLANG=1 scripts/deps.sh
	@CC=clang cmake -S . -B $(BUILD)-fuzz -DCMAKE_BUILD_TYPE=Debug -DGS_FUZZ=ON -DGS_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD)-fuzz -j $(JOBS)
	@scripts/fuzz.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz $(BUILD)-tsan $(BUILD)-deb
