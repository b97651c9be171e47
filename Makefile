# SPDX-License-Identifier: Apache-2.0
#
# One non-recursive Makefile for the whole project: the core library (shared/), the
# certificate library (certs/), both daemons, every test binary, fuzz targets and benchmarks.
#
#   make            release build of both daemons (build/release/)
#   make test       every test: unit, integration against a real control plane, end to end
#   make help       every target and variable, from the "## " line above each
#
# Variants never share objects: build/<variant>/ mirrors the source tree. Add CFLAGS=... to
# extend the flags (they are appended, never replace the warnings); WERROR=0 drops -Werror.

.DEFAULT_GOAL := all
SHELL := /bin/bash

CC ?= gcc
ifeq ($(origin CC),default)
CC := gcc
endif
AR ?= ar
FUZZ_CC ?= clang
CLANG_FORMAT ?= clang-format
CLANG_TIDY ?= clang-tidy
## 0 drops -Werror
WERROR ?= 1
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

## 1 prints every command
V ?= 0
ifeq ($(V),1)
Q :=
else
Q := @
endif

# ---------------------------------------------------------------------------------------------
# Flags
# ---------------------------------------------------------------------------------------------

PKGS := json-c yaml-0.1 libcurl openssl libgit2 libmicrohttpd gnutls nettle libarchive gpgme libpcre2-8 libxcrypt zlib
TEST_PKGS := cmocka

# pkg-config is evaluated once, and not at all for targets that must work before the
# libraries are installed.
NO_PKG_GOALS := deps clean help format format-check run layers
ifneq ($(filter-out $(NO_PKG_GOALS),$(or $(MAKECMDGOALS),all)),)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) $(TEST_PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
TEST_LIBS := $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)
endif

STD := -std=c11 -D_GNU_SOURCE
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wmissing-declarations -Wpointer-arith -Wwrite-strings -Wformat=2 -Wformat-security \
	-Wundef -Wvla -Wcast-align -Wimplicit-fallthrough -Wno-missing-field-initializers
ifeq ($(WERROR),1)
WARN += -Werror
endif
INCLUDES := -Ishared/include -I.
# Where the test programs find their fixtures and the tree; only files under tests/ get them,
# so that nothing the daemons ship can depend on the checkout.
TEST_DEFS = -DCO_TEST_FIXTURES=\"$(CURDIR)/tests/fixtures\" -DCO_SOURCE_ROOT=\"$(CURDIR)\"
DEPFLAGS = -MMD -MP

OPT_release := -O2 -g -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
LDOPT_release := -pie -Wl,-z,relro,-z,now
OPT_debug := -O0 -g3
LDOPT_debug :=
OPT_test := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all -DCO_UNIT_TEST
LDOPT_test := -fsanitize=address,undefined
# ThreadSanitizer cannot share a process with AddressSanitizer: a variant of its own, for the
# controller's integration suites (TSAN_BINS, the "tsan" lane of tests/run.sh).
OPT_tsan := -O1 -g -fno-omit-frame-pointer -fsanitize=thread
LDOPT_tsan := -fsanitize=thread

# ---------------------------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------------------------

SHARED_SRC := $(sort $(wildcard shared/src/*/*.c shared/src/*/*/*.c))
CERTS_SRC := $(sort $(wildcard certs/*.c))
CTL_SRC := $(sort $(filter-out controller/main.c,$(wildcard controller/*.c)))
WH_SRC := $(sort $(filter-out webhook/main.c,$(wildcard webhook/*.c)))
# tests/bench/ctlbench.c is bench_controller's instrument; the test support library carries it
# so that the one link rule of the test programs links it.
SUPPORT_SRC := $(sort $(wildcard tests/support/*.c)) tests/bench/ctlbench.c
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
INTEG_SRC := $(sort $(wildcard tests/integration/test_*.c))
CONF_SRC := $(sort $(wildcard tests/conformance/test_*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
BENCH_SRC := $(sort $(wildcard tests/bench/bench_*.c))
PUBLIC_HEADERS := $(sort $(wildcard shared/include/co/*/*.h))
TEST_PROGS := $(UNIT_SRC) $(INTEG_SRC) $(CONF_SRC) $(BENCH_SRC)
ALL_C := $(SHARED_SRC) $(CERTS_SRC) $(CTL_SRC) $(WH_SRC) controller/main.c webhook/main.c \
	$(SUPPORT_SRC) $(UNIT_SRC) $(INTEG_SRC) $(CONF_SRC) $(BENCH_SRC)
ALL_FORMATTED := $(ALL_C) $(FUZZ_SRC) $(PUBLIC_HEADERS) \
	$(sort $(wildcard shared/src/*/*.h shared/src/*/*/*.h certs/*.h controller/*.h webhook/*.h \
	tests/support/*.h tests/bench/*.h))

# ---------------------------------------------------------------------------------------------
# Per-variant rules
# ---------------------------------------------------------------------------------------------

# $(1) = variant. Defines objects, archives and linked programs under build/$(1)/.
define VARIANT_RULES
B_$(1) := build/$(1)
CFLAGS_$(1) = $$(STD) $$(WARN) $$(OPT_$(1)) $$(INCLUDES) $$(PKG_CFLAGS) $$(CFLAGS)
LDFLAGS_$(1) = $$(LDOPT_$(1)) $$(LDFLAGS)

build/$(1)/%.o: %.c | build/$(1)/.dir
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  CC      $(1)/$$<")
	$$(Q)$$(CC) $$(CFLAGS_$(1)) $$(if $$(filter tests/%,$$<),$$(TEST_DEFS)) $$(DEPFLAGS) -c -o $$@ $$<

build/$(1)/libco.a: $$(SHARED_SRC:%.c=build/$(1)/%.o)
	@$$(if $$(Q),echo "  AR      $$@")
	$$(Q)rm -f $$@ && $$(AR) rcs $$@ $$^

build/$(1)/libcocerts.a: $$(CERTS_SRC:%.c=build/$(1)/%.o)
	@$$(if $$(Q),echo "  AR      $$@")
	$$(Q)rm -f $$@ && $$(AR) rcs $$@ $$^

build/$(1)/libctl.a: $$(CTL_SRC:%.c=build/$(1)/%.o)
	@$$(if $$(Q),echo "  AR      $$@")
	$$(Q)rm -f $$@ && $$(AR) rcs $$@ $$^

build/$(1)/libwh.a: $$(WH_SRC:%.c=build/$(1)/%.o)
	@$$(if $$(Q),echo "  AR      $$@")
	$$(Q)rm -f $$@ && $$(AR) rcs $$@ $$^

build/$(1)/libtestsupport.a: $$(SUPPORT_SRC:%.c=build/$(1)/%.o)
	@$$(if $$(Q),echo "  AR      $$@")
	$$(Q)rm -f $$@ && $$(AR) rcs $$@ $$^

ARCHIVES_$(1) := build/$(1)/libctl.a build/$(1)/libwh.a build/$(1)/libcocerts.a \
	build/$(1)/libco.a

build/$(1)/component-controller: build/$(1)/controller/main.o $$(ARCHIVES_$(1))
	@$$(if $$(Q),echo "  LINK    $$@")
	$$(Q)$$(CC) $$(LDFLAGS_$(1)) -o $$@ $$< $$(ARCHIVES_$(1)) $$(PKG_LIBS)

# The webhook maps only the libraries it calls (not libgit2, libarchive, gpgme, pcre2, which the
# core library's rendering code needs, nor libcurl and OpenSSL: its Kubernetes client runs over
# GnuTLS, the TLS library libmicrohttpd brings, and certs/ is written on GnuTLS too): fewer pages
# resident, less start-up work. It allocates with mimalloc: an admission still allocates and
# frees many small blocks (field paths, the answer, and on the mutating and conversion routes a
# json-c tree of the object), which mimalloc's per-thread free lists serve several times faster
# than glibc's malloc (make bench BENCH=webhook). Linked before libc, it replaces malloc for every
# library in the process.
build/$(1)/component-webhook: build/$(1)/webhook/main.o $$(ARCHIVES_$(1))
	@$$(if $$(Q),echo "  LINK    $$@")
	$$(Q)$$(CC) $$(LDFLAGS_$(1)) -Wl,--as-needed -o $$@ $$< $$(ARCHIVES_$(1)) -lmimalloc \
		$$(PKG_LIBS)

$$(TEST_PROGS:%.c=build/$(1)/%): build/$(1)/%: build/$(1)/%.o build/$(1)/libtestsupport.a \
		$$(ARCHIVES_$(1))
	@$$(if $$(Q),echo "  LINK    $$@")
	$$(Q)$$(CC) $$(LDFLAGS_$(1)) -o $$@ $$< build/$(1)/libtestsupport.a $$(ARCHIVES_$(1)) \
		$$(PKG_LIBS) $$(TEST_LIBS)

build/$(1)/.dir:
	@mkdir -p $$(@D) && touch $$@

-include $$(shell find build/$(1) -name '*.d' 2>/dev/null)
endef

VARIANTS := release debug test tsan
$(foreach v,$(VARIANTS),$(eval $(call VARIANT_RULES,$(v))))

.SECONDARY:

DAEMONS = build/$(1)/component-controller build/$(1)/component-webhook
UNIT_BINS := $(UNIT_SRC:%.c=build/test/%)
INTEG_BINS := $(INTEG_SRC:%.c=build/test/%)
# The tsan lane: the integration suites that start the controller's manager (its informers,
# workers, elector, prober and poller all run), once more under ThreadSanitizer. tests/run.sh
# picks the same suites by the same rule.
TSAN_BINS := $(patsubst %.c,build/tsan/%,$(shell grep -lw ctl_manager_start $(INTEG_SRC)))

# ---------------------------------------------------------------------------------------------
# Main targets
# ---------------------------------------------------------------------------------------------

.PHONY: all release debug controller webhook test test-unit test-integration test-e2e \
	test-tsan test-conformance test-build test-valgrind headercheck format format-check tidy \
	cppcheck layers fuzz fuzz-run fuzz-campaign bench chaos clean deps help run

## release build of both daemons (build/release/)
all: release

## the same as all
release: $(call DAEMONS,release)
## both daemons unoptimised (build/debug/)
debug: $(call DAEMONS,debug)
## the release controller only
controller: build/release/component-controller
## the release webhook only
webhook: build/release/component-webhook

# Everything `make test` runs, built first so that a compile error stops before any suite.
# The release daemons too: e2e/test_webhook_release runs the webhook that ships.
## build everything the test suites run, run nothing
test-build: $(UNIT_BINS) $(INTEG_BINS) $(TSAN_BINS) $(call DAEMONS,test) \
	$(call DAEMONS,release) $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)

## names suites to run (any test target): TEST_SUITES='unit/test_buf e2e/test_webhook'
TEST_SUITES ?=
## every suite: unit, fuzz smoke, integration and e2e against a real control plane, tsan
test: test-build
	$(Q)tests/run.sh $(TEST_SUITES)

## the unit suites (sanitizers on); the script suites among them run the test daemons
test-unit: $(UNIT_BINS) $(call DAEMONS,test)
	$(Q)tests/run.sh --only unit $(TEST_SUITES)

## the integration suites (a real kube-apiserver and etcd)
test-integration: test-build
	$(Q)tests/run.sh --only integration $(TEST_SUITES)

## the end-to-end suites (the daemons against a real control plane)
test-e2e: test-build
	$(Q)tests/run.sh --only e2e $(TEST_SUITES)

## the manager's integration suites under ThreadSanitizer
test-tsan: $(TSAN_BINS)
	$(Q)tests/run.sh --only tsan $(TEST_SUITES)

# The conformance lane: behaviour `make test` shows with the repository's own data, shown again
# with other projects' (the published Flux source CRDs, files written by the real sops), read
# from ../shared/fixtures beside the checkout, or SHARED_FIXTURES=DIR. CI runs it after `make
# test`; without the fixtures it fails at once, before building, and says so. `make test` never
# reads them. The lane starts a control plane of its own, so that no CRD another run installed
# stands in for the published ones.
## the other projects' test data for test-conformance
SHARED_FIXTURES ?= $(abspath ../shared/fixtures)
ifneq ($(wildcard $(SHARED_FIXTURES)/.),)
## the conformance lane: the same behaviour with other projects' data (SHARED_FIXTURES)
test-conformance: test-build $(CONF_SRC:%.c=build/test/%)
	$(Q)env -u CO_TEST_KUBECONFIG CO_SHARED_FIXTURES="$(SHARED_FIXTURES)" \
		tests/run.sh --only conformance $(TEST_SUITES)
else
test-conformance:
	@echo "test-conformance: $(SHARED_FIXTURES) does not exist, so the conformance lane cannot" >&2
	@echo "  run. It checks the same behaviour as make test with other projects' test data (the" >&2
	@echo "  published Flux source CRDs, files written by the real sops), which this repository" >&2
	@echo "  does not carry; put them in ../shared/fixtures beside the checkout or name their" >&2
	@echo "  directory with SHARED_FIXTURES=DIR. make test needs none of it." >&2
	@exit 1
endif

## the unit tests once more, without sanitizers, under valgrind
test-valgrind: $(UNIT_SRC:%.c=build/debug/%)
	$(Q)set -e; for t in $^; do \
		echo "== valgrind $$t"; \
		valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
			-q $$t; \
	done

# ---------------------------------------------------------------------------------------------
# Fuzzing (libFuzzer, clang): build/fuzz/fuzz_<name>
# ---------------------------------------------------------------------------------------------

FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
	-DCO_FUZZING
# The project's warnings, less three that clang reports where gcc, the compiler of record, does
# not: -Wcast-align (gcc warns only on strict-alignment targets), -Wformat-nonliteral inside
# functions that take a format and a va_list, -Wmissing-braces for `{0}` initialisers.
FUZZ_WARN := $(WARN) -Wno-cast-align -Wno-format-nonliteral -Wno-missing-braces
build/fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZCC  $<")
	$(Q)$(FUZZ_CC) $(STD) $(FUZZ_WARN) $(FUZZ_FLAGS) $(INCLUDES) $(PKG_CFLAGS) -MMD -MP -c -o $@ $<

FUZZ_LIB_OBJS := $(SHARED_SRC:%.c=build/fuzz/obj/%.o) $(CERTS_SRC:%.c=build/fuzz/obj/%.o) \
	$(WH_SRC:%.c=build/fuzz/obj/%.o) $(CTL_SRC:%.c=build/fuzz/obj/%.o)
build/fuzz/libfuzzco.a: $(FUZZ_LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

build/fuzz/fuzz_%: build/fuzz/obj/tests/fuzz/fuzz_%.o build/fuzz/libfuzzco.a
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(PKG_LIBS)

-include $(shell find build/fuzz -name '*.d' 2>/dev/null)

## build the libFuzzer targets (clang): build/fuzz/fuzz_<name>
fuzz: $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)

## hours of fuzz-campaign, shared by the targets (fractional: 0.05 is three minutes)
HOURS ?= 1
## targets of fuzz-campaign (names without fuzz_); empty: every target
FUZZ_TARGETS ?=
## a fuzzing campaign: every target in turn within HOURS, corpora merged back into
## tests/fuzz/corpus/, a table of executions, coverage and findings (docs/fuzzing.md)
fuzz-campaign: fuzz
	$(Q)tests/fuzz/campaign.sh --hours $(HOURS) $(FUZZ_TARGETS)

## seconds per target of fuzz-run
FUZZ_SECONDS ?= 60
## every target in turn for FUZZ_SECONDS, corpora in build/fuzz/corpus/ (nothing merged back;
## fuzz-campaign keeps what it finds)
fuzz-run: fuzz
	$(Q)for f in $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%); do \
		name=$$(basename $$f); corpus=build/fuzz/corpus/$$name; mkdir -p $$corpus; \
		seeds=tests/fuzz/corpus/$${name#fuzz_}; \
		$$f -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 $$corpus \
			$$( [ -d $$seeds ] && echo $$seeds ) || exit 1; \
	done

# ---------------------------------------------------------------------------------------------
# Benchmarks (never fail on a time; they print figures and ratios)
# ---------------------------------------------------------------------------------------------

BENCH_BINS := $(BENCH_SRC:%.c=build/release/%)
## one benchmark for bench (bench_<name>.c), e.g. BENCH=helm; empty: all
BENCH ?=
## the benchmarks; they print figures and ratios, never fail on a time
bench: $(BENCH_BINS) $(call DAEMONS,release)
	$(Q)tests/bench/run.sh $(BENCH)

# ---------------------------------------------------------------------------------------------
# Reliability campaigns (docs/chaos.md): the release daemons against private control planes
# ---------------------------------------------------------------------------------------------

## one campaign for chaos, e.g. CHAOS=controller_kill; empty: all of them
CHAOS ?=
## the reliability campaigns at full size (kills, restarts, network and webhook faults, soak; docs/chaos.md); each prints its summary
chaos: $(call DAEMONS,release)
	$(Q)tests/chaos/run.sh $(CHAOS)

# ---------------------------------------------------------------------------------------------
# Code checks
# ---------------------------------------------------------------------------------------------

## each public header compiles on its own, pedantic, without third-party headers
headercheck: $(PUBLIC_HEADERS:shared/include/co/%.h=build/headercheck/%.ok)
build/headercheck/%.ok: shared/include/co/%.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  HDR     $<")
	$(Q)printf '#include "co/%s.h"\n#include "co/%s.h"\ntypedef int co__headercheck;\n' $* $* \
		> $(@:.ok=.c)
	$(Q)$(CC) $(STD) $(WARN) -Werror -pedantic -Ishared/include -fsyntax-only $(@:.ok=.c)
	$(Q)if grep -nE '#include <(json-c|yaml|curl|openssl|git2|microhttpd|archive|gpgme|pcre2)' $<; \
		then echo "$<: public headers must not include third-party headers"; exit 1; fi
	$(Q)touch $@

## clang-format every C file in place
format:
	$(Q)$(CLANG_FORMAT) -i $(ALL_FORMATTED)

## fail when a C file is not formatted
format-check:
	$(Q)$(CLANG_FORMAT) --dry-run --Werror $(ALL_FORMATTED)

# compile_commands.json for clang-tidy, written from the same flags the build uses (the
# "arguments" form needs no shell quoting).
TIDY_ARGS = cc $(STD) $(WARN) $(OPT_debug) $(INCLUDES) $(PKG_CFLAGS) -DCO_UNIT_TEST
build/compile_commands.json: Makefile $(ALL_C)
	@mkdir -p $(@D)
	$(Q){ echo '['; sep=''; for f in $(ALL_C); do \
		printf '%s{"directory":"%s","file":"%s","arguments":[' "$$sep" "$(CURDIR)" "$$f"; \
		for a in $(TIDY_ARGS); do printf '"%s",' "$$a"; done; \
		printf '"-DCO_TEST_FIXTURES=\\"x\\"","-DCO_SOURCE_ROOT=\\"x\\"","-c","%s"]}\n' "$$f"; \
		sep=','; done; echo ']'; } > $@

# clang-tidy per file, incrementally: a file's stamp depends on its test-variant object, which
# the compiler's -MMD dependencies already rebuild whenever the file or a header it includes
# changes. Run with -j for parallelism.
TIDY_STAMPS := $(ALL_C:%.c=build/tidy/%.ok)
build/tidy/%.ok: build/test/%.o .clang-tidy | build/compile_commands.json
	@mkdir -p $(@D)
	@$(if $(Q),echo "  TIDY    $*.c")
	$(Q)if $(CLANG_TIDY) --quiet -p build $*.c > $(@:.ok=.log) 2>&1; then touch $@; else \
		grep -v -E '^[0-9]+ warnings? generated|^Suppressed|^Use -header-filter' \
			$(@:.ok=.log); exit 1; fi

## clang-tidy every C file (incremental; use -j)
tidy: build/compile_commands.json $(TIDY_STAMPS)

# varFuncNullUB is suppressed: NULL is ((void *)0) with glibc, and the sentinel attribute on
# the logger checks that field lists end with it.
## cppcheck every C file
cppcheck:
	$(Q)cppcheck --quiet --suppress=varFuncNullUB --enable=warning,performance,portability --error-exitcode=1 \
		--inline-suppr --suppress=missingIncludeSystem -Ishared/include -I. \
		-D_GNU_SOURCE $(ALL_C)

## the include layering of shared/ (shared/README.md, "Layers")
layers:
	$(Q)tests/support/layers.py

# ---------------------------------------------------------------------------------------------
# Set-up, running, housekeeping
# ---------------------------------------------------------------------------------------------

## install the Debian packages the project needs (idempotent)
deps:
	$(Q)tests/env/deps.sh

# crds/ is generated from the API schemas in shared/src/api/component/component_schema.c,
# shared/src/api/policy.c and shared/src/api/blueprint.c:
# crds/*.yaml (the default install: the Component CRD serves v1alpha1 only), crds/v1beta1/
# (the Component CRD serving v1beta1 too, through the conversion webhook) and the chart's
# template of the Component CRD; the unit tests fail when the committed files differ. deploy/
# keeps copies: deploy/crds (the kustomize base's CRDs), deploy/v1beta1 (the opt-in kustomize
# Component) and deploy/chart/crds (the ComponentPolicy, Blueprint and BlueprintVersion CRDs,
# which Helm installs first).
.PHONY: crds
# CRDS_OUT=DIR and DEPLOY_OUT=DIR write them elsewhere (tests/unit/test_crds_generated.sh
# compares the two).
## where crds writes crds/
CRDS_OUT ?= crds
## where crds writes the copies under deploy/
DEPLOY_OUT ?= deploy
## regenerate crds/ and the copies under deploy/ from the API schemas
crds: build/test/tests/unit/test_component build/test/tests/unit/test_policy \
	build/test/tests/unit/test_blueprint
	$(Q)mkdir -p $(CRDS_OUT)/v1beta1 $(DEPLOY_OUT)/crds $(DEPLOY_OUT)/v1beta1 \
		$(DEPLOY_OUT)/chart/crds $(DEPLOY_OUT)/chart/templates
	$(Q)CO_UPDATE_CRDS=1 CO_CRDS_DIR=$(abspath $(CRDS_OUT)) CO_DEPLOY_DIR=$(abspath $(DEPLOY_OUT)) \
		build/test/tests/unit/test_component >/dev/null
	$(Q)CO_UPDATE_CRDS=1 CO_CRDS_DIR=$(abspath $(CRDS_OUT)) build/test/tests/unit/test_policy >/dev/null
	$(Q)CO_UPDATE_CRDS=1 CO_CRDS_DIR=$(abspath $(CRDS_OUT)) \
		build/test/tests/unit/test_blueprint >/dev/null
	$(Q)cp $(CRDS_OUT)/*.yaml $(DEPLOY_OUT)/crds/
	$(Q)cp $(CRDS_OUT)/core.cs.sap.com_componentpolicies.yaml \
		$(CRDS_OUT)/core.cs.sap.com_blueprints.yaml \
		$(CRDS_OUT)/core.cs.sap.com_blueprintversions.yaml $(DEPLOY_OUT)/chart/crds/
	$(Q)cp $(CRDS_OUT)/v1beta1/core.cs.sap.com_components.yaml $(DEPLOY_OUT)/v1beta1/

# The operator on this machine with sample Components (README "Quick start"); RUN_ARGS=--once
# stops once they are Ready. No prerequisites: the script installs what is missing first and
# then builds the daemons itself. On a terminal the script runs as a job of its own (set -m),
# which holds the terminal: Ctrl-C reaches the script, which stops everything and exits 0, and
# not make, which would report an interrupt and exit with an error.
## arguments of run, e.g. --once
RUN_ARGS ?=
## the operator on this machine with sample Components
run:
	$(Q)if [ -t 0 ]; then set -m; fi; tests/env/run-local.sh $(RUN_ARGS); exit $$?

## remove build/
clean:
	rm -rf build

# Written from the "## " lines: the text above a target or a variable is its entry here.
## this list
help:
	@awk 'sub(/^## /, "") { doc = doc (doc == "" ? "" : " ") $$0; next } \
		doc != "" && /^[a-z][a-z0-9-]*:/ { sub(/:.*/, ""); t[++nt] = sprintf("  %-18s %s", $$0, doc) } \
		doc != "" && /^[A-Z_]+ *[?:]?=/ { sub(/ *[?:]?=.*/, ""); v[++nv] = sprintf("  %-18s %s", $$0, doc) } \
		{ doc = "" } \
		END { print "make [TARGET...] [VARIABLE=value...]\n\nTargets:"; for (i = 1; i <= nt; i++) print t[i]; \
			print "\nVariables:"; for (i = 1; i <= nv; i++) print v[i] }' $(firstword $(MAKEFILE_LIST))
