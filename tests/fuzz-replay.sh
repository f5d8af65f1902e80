#!/bin/sh
# Replay the config fuzz target over its corpus, the bad configs and the
# examples: every input that ever mattered runs in every build.
src=${top_srcdir:-.}
exec "${top_builddir:-.}/tests/fuzz/replay_config" \
    "$src/tests/fuzz/corpus/config" \
    "$src/tests/config/bad" \
    "$src/etc/examples"
