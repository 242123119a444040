# Entry points for a fresh machine. `make demo`, `make check`, `make bench`
# and `make deb` install what is missing (Debian packages), build, and run;
# each installs only what it needs.
BUILD      ?= build
BUILD_ASAN ?= build-asan
ALLOCPROF  := $(BUILD)/cli/allocprof

# Building and `make demo`: compilers, meson, the libraries (libiberty-dev:
# binutils' demangler, for Rust names), and glibc's debug symbols so that
# the frames under main have names.
DEBS := gcc g++ make meson ninja-build pkg-config python3 \
	libunwind-dev libdw-dev libelf-dev libjansson-dev libncurses-dev zlib1g-dev libzstd-dev libpcre2-dev \
	libiberty-dev \
	libc6-dbg
# What `make deb` adds: the Debian packaging tools, and git, whose list of
# files is what the package is built from.
DEB_DEBS := debhelper dpkg-dev git
# What `make check` adds: the tools tests compare with or drive. Every test
# that would skip without a tool has it here, so a fresh machine skips none:
# eu-addr2line (symbolize), valgrind (e2e, record, handoff), go (pprof
# export, sync.Pool model), tmux (tui on a terminal, completion), groff
# (man pages), heaptrack (temporary allocations), debhelper (the package),
# chromium (the flame graph's script, headless), clang (the reader's
# libFuzzer target, which meson defines when clang is there: `make fuzz`;
# and the clang-built programs of tests/symbolize/toolchains.py), llvm
# (llvm-symbolizer, what those programs' frames are compared with), rustc
# (Debian's, for the Rust program of tests/symbolize/rust.py).
# cppcheck: a C++ program with deep stacks, whose every stack
# tests/e2e/unwind.sh walks both ways.
# tests/deps holds the tests to it.
FUZZ_DEBS := clang
CHECK_DEBS := elfutils valgrind golang-go tmux groff-base heaptrack chromium strace sqlite3 libjemalloc2 llvm rustc nginx cppcheck $(FUZZ_DEBS) $(DEB_DEBS)
# What `make bench` adds to those: the tools it measures against (heaptrack
# comes with CHECK_DEBS).
BENCH_DEBS := sqlite3 zstd cppcheck

# install-missing PACKAGES: apt-get installs those not installed yet.
define install-missing
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

.PHONY: all deps check-deps bench-deps deb-deps build build-asan demo check bench deb fuzz clean

all: build

deps:
	$(call install-missing,$(DEBS))

check-deps:
	$(call install-missing,$(DEBS) $(CHECK_DEBS))

bench-deps:
	$(call install-missing,$(DEBS) heaptrack $(BENCH_DEBS))

deb-deps:
	$(call install-missing,$(DEBS) $(DEB_DEBS))

$(BUILD)/build.ninja:
	meson setup $(BUILD) -Dwerror=true

$(BUILD_ASAN)/build.ninja:
	meson setup $(BUILD_ASAN) -Dwerror=true -Dsanitized=true -Db_sanitize=address,undefined -Db_lundef=false

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

build-asan: deps $(BUILD_ASAN)/build.ninja
	ninja -C $(BUILD_ASAN)

demo: build
	@sh tools/demo.sh $(BUILD)

check: check-deps build build-asan
	@python3 tools/run-tests.py $(BUILD) $(BUILD_ASAN)

bench: bench-deps build
	@sh bench/run.sh $(BUILD)

# `make deb`: the package, built by dpkg-buildpackage from the source
# files a clean clone has (tools/build-deb.sh) into $(BUILD)/deb, and checked
# (tools/check-deb.sh: contents, and record + top from the unpacked files).
deb: deb-deps build
	@deb=$$(sh tools/build-deb.sh $(BUILD)/deb) && echo "built $$deb" && \
		sh tools/check-deb.sh $$deb $(BUILD)/testdata/single make_node

# `make fuzz`: the reader's libFuzzer target (tests/trace/fuzz-reader.c,
# clang with ASan and UBSan) for FUZZ_SECONDS, from seeds made of the
# synthetic and testdata traces (tests/trace/fuzz-seeds.sh) and the kept
# inputs (tests/trace/fuzz-corpus/). New inputs go to $(FUZZ_DIR)/corpus,
# a finding to $(FUZZ_DIR)/crash-*: copy it into tests/trace/fuzz-corpus/
# with its fix, and the suite runs it from then on.
FUZZ_SECONDS ?= 60
FUZZ_DIR     ?= $(BUILD)/fuzz
fuzz: build
	$(call install-missing,$(FUZZ_DEBS))
	@[ -f $(BUILD)/build.ninja ] && grep -q fuzz-reader $(BUILD)/build.ninja || meson setup --reconfigure $(BUILD)
	ninja -C $(BUILD) tests/trace/fuzz-reader
	rm -rf $(FUZZ_DIR)/seeds && mkdir -p $(FUZZ_DIR)/corpus
	sh tests/trace/fuzz-seeds.sh $(BUILD)/tests/trace/fuzz-driver $(BUILD)/tests/trace/mktrace \
		$(FUZZ_DIR)/seeds $(ALLOCPROF) $(BUILD)/testdata
	$(BUILD)/tests/trace/fuzz-reader -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(FUZZ_DIR)/ \
		$(FUZZ_DIR)/corpus $(FUZZ_DIR)/seeds tests/trace/fuzz-corpus

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
