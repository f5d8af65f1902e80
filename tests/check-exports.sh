#!/bin/sh
# libmpikvs exports only mpikvs_* symbols: anything else is an internal
# name leaking into every application that links it.
lib=${top_builddir:-.}/libmpikvs/.libs/libmpikvs.so
if [ ! -f "$lib" ]; then
    echo "check-exports: $lib not built" >&2
    exit 1
fi
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort)
if [ -z "$exported" ]; then
    echo "check-exports: $lib exports nothing" >&2
    exit 1
fi
stray=$(printf '%s\n' "$exported" | grep -v '^mpikvs_' || true)
if [ -n "$stray" ]; then
    echo "check-exports: $lib exports symbols outside mpikvs_:" >&2
    printf '  %s\n' $stray >&2
    exit 1
fi
echo "check-exports: $(printf '%s\n' "$exported" | wc -l) symbols, all mpikvs_*"
