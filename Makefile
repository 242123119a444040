# Entry points for a fresh machine. `make demo` and `make check` install what
# is missing (Debian packages), build, and run.
BUILD      ?= build
BUILD_ASAN ?= build-asan
ALLOCPROF  := $(BUILD)/cli/allocprof

DEBS := gcc g++ make meson ninja-build pkg-config python3 \
	libunwind-dev libdw-dev libelf-dev libjansson-dev libncurses-dev zlib1g-dev libzstd-dev libpcre2-dev \
	elfutils binutils valgrind golang-go heaptrack sqlite3 libc6-dbg

.PHONY: all deps build build-asan demo check bench clean

all: build

deps:
	@missing=""; for p in $(DEBS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

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

check: build build-asan
	@python3 tools/run-tests.py $(BUILD) $(BUILD_ASAN)

bench: build
	@sh bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
