#!/bin/sh
# Replay the fuzz targets over their corpora: the config target over its
# corpus, the bad configs and the examples; the region target over the
# seeds region_seeds makes with this build.  Every input that ever
# mattered runs in every build.
src=${top_srcdir:-.}
build=${top_builddir:-.}
"$build/tests/fuzz/replay_config" \
    "$src/tests/fuzz/corpus/config" \
    "$src/tests/config/bad" \
    "$src/etc/examples" || exit 1
seeds=$(mktemp -d "${TMPDIR:-/tmp}/region-seeds.XXXXXX") || exit 1
trap 'rm -rf "$seeds"' EXIT
"$build/tests/fuzz/region_seeds" "$seeds" || exit 1
set -- "$seeds"
[ -d "$src/tests/fuzz/corpus/region" ] && set -- "$@" "$src/tests/fuzz/corpus/region"
# bounded: an input that makes a tier walk loop (a finding of the fuzzer)
# must fail the suite, not hang it
timeout 600 "$build/tests/fuzz/replay_region" "$@"
