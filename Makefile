# SPDX-License-Identifier: GPL-2.0-or-later
#
# make          install missing Debian packages, configure if needed, build
# make check    build, then run every test suite of the project
# make demo     build, then run a real-time guest in a pseudo-locked region
#               (DEMO_ARGS=--emulated or --native: which host; --libvirt:
#               the same guest from domain XML through libvirt; scripts/demo)
# make deb      build, then package it and the fork's libvirt for Debian 12
#               into build/deb/ (scripts/make-deb; install with
#               apt install ./build/deb/*.deb)
# make libvirt-deb  Debian's libvirt packages with libvirt-patches/, into
#               build/libvirt-deb/ (scripts/build-libvirt-deb); the tests
#               run libvirt from them
# make bench    build, then run the benchmarks and print their figures
# make fuzz     build, then fuzz each resctrl parser for 2 minutes
# make clean    remove the build directory (downloads stay cached)

BUILD ?= build
B := $(BUILD)
MESON_TEST_ARGS ?=
DEMO_ARGS ?=

# Let ccache serve a clone in another folder (CI clones anew each run):
# paths below the clone are hashed as relative ones, and the working
# directory is left out of the hash.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all qemu ours deps check deb libvirt-deb demo bench fuzz clean help

# What `make` builds of QEMU: the system emulator, the storage daemon
# that the rig runs as a vhost-user back end, and the cache-model plugin.
# Other upstream targets (qemu-img, the unit tests, ...) build on
# request: ninja -C build/qemu TARGET
QEMU_TARGETS ?= qemu-system-x86_64 storage-daemon/qemu-storage-daemon \
	contrib/plugins/libcatcache.so

all: ours

# QEMU with the overlay and the patches
qemu: $(B)/.configured deps
	@scripts/overlay-sync $(B)/src
	@ninja -C $(B)/qemu $(QEMU_TARGETS)
	@scripts/link-firmware $(B)/qemu

# The project's own programs and the rig (kernels, initramfs)
ours: qemu
	@ninja -C $(B)/ours

deps:
	@scripts/install-deps

# configure again when the pins, the patches or configure itself change;
# config.status repeats the options of the last ./configure.
$(B)/.configured: configure upstream.pins patches/series $(wildcard patches/*.patch) \
		libvirt-patches/series $(wildcard libvirt-patches/*.patch) | deps
	@if [ -x $(B)/config.status ]; then $(B)/config.status; \
	 else ./configure --build-dir=$(B); fi
	@touch $@

# The Debian packages too: tests/deb installs them, the Debian host of
# the rig runs them, and libvirt's tests and the busybox rig's libvirt
# come from libvirt's packages and their build
check: deb
	@scripts/run-checks $(B) $(MESON_TEST_ARGS)

# QEMU's, the host unit's and the kernel's packages, and those of
# libvirt's that a QEMU host installs
deb: all libvirt-deb
	@scripts/make-deb $(B)

# Debian's own packaging of the pinned libvirt, with libvirt-patches/ in
# its patch series; configure fetches the tarball it builds from
libvirt-deb: $(B)/.configured
	@scripts/build-libvirt-deb $(B)

# The demo builds through the targets above itself, one step at a time
demo: deps
	@scripts/demo $(DEMO_ARGS) $(B)

# Benchmarks print figures in their TAP comments; run-bench shows them
bench: all
	@scripts/run-bench $(B) --no-suite fuzz-long $(MESON_TEST_ARGS)

# The long fuzzing runs print their executions as benchmark figures
fuzz: all
	@scripts/run-bench $(B) --suite fuzz-long $(MESON_TEST_ARGS)

clean:
	rm -rf $(B)

help:
	@sed -n '3,16p' Makefile | sed 's/^# //'
