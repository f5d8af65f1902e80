#!/bin/sh
# mpikvs-config as a user runs it: outputs and exit statuses.
src=${top_srcdir:-.}
cfg="${top_builddir:-.}/mpikvs-config/mpikvs-config"
chem="$src/etc/examples/chemistry.json"
pass=0
fail=0

# expect NAME STATUS EXPECTED-SUBSTRING -- ARGS...: run, compare, count.
expect() {
    name=$1 want_rc=$2 want_text=$3
    shift 4
    out=$("$cfg" "$@" 2>&1)
    rc=$?
    if [ "$rc" -ne "$want_rc" ]; then
        echo "FAIL $name: exit $rc, expected $want_rc; output:"
        printf '%s\n' "$out"
        fail=$((fail + 1))
    elif ! printf '%s\n' "$out" | grep -qF -- "$want_text"; then
        echo "FAIL $name: output lacks '$want_text'; output:"
        printf '%s\n' "$out"
        fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
}

expect check-ok 0 '"key_size": 80' -- check "$chem"
# the resolved config shows the transport next to the mode, auto unless given
expect check-transport 0 '"transport": "auto"' -- check "$chem"
expect check-bad-transport 1 "bad-transport.json: tables.t.transport: 'verbs' is not one of: auto, mpi, ucx" -- \
    check "$src/tests/config/bad/bad-transport.json"
expect check-size 0 'chemistry: 7.2 GiB of 8G per node, tier 737.3 MiB' -- \
    check "$chem" --size 8G
three="$src/tests/config/good/three-tables.json"
expect check-size-split 0 'misc: 6.0 GiB of 16G per node, tier 1.5 GiB' -- \
    check --size 16G "$three"
expect check-size-nothing-left 1 'three-tables.json: tables.misc.size: not given, and nothing is left for this table' -- \
    check --size 8G "$three"
expect check-size-too-small 1 'three-tables.json: tables: the tables need 7.5 GiB, more than the 6.0 GiB of DHT memory per node' -- \
    check --size 6G "$three"
# The smallest usable size: one bucket of each table after its tier and
# counters for 64 ranks (--ranks).  minimal.json's bucket: a 64-byte
# header and four slots of an 80-byte key, a 104-byte value and an 8-byte
# checksum, 832 bytes; 64 ranks' counters end at 256 + 256 + 64 * 320 =
# 20992 and the buckets start on the next page: 24576 + 832 = 25408.
minimal="$src/etc/examples/minimal.json"
expect check-size-below-smallest 1 '--size=4K is below the smallest usable size, 25K (25408 bytes): counters for 64 ranks and one bucket in each table, after its tier (buckets of cache: 832 bytes)' -- \
    check --size 4K "$minimal"
expect check-size-below-smallest-table 1 'minimal.json: tables.cache.size: 4.0 KiB cannot hold counters for 64 ranks and one bucket of 832 bytes (4 slots of 80-byte keys and 104-byte values): it needs 25408 bytes' -- \
    check --size 4K "$minimal"
expect check-size-smallest 0 'cache: 24.8 KiB of 25408 per node' -- \
    check --size 25408 "$minimal"
expect check-size-smallest-less 1 '--size=25407 is below the smallest usable size, 25408:' -- \
    check --size 25407 "$minimal"
# chemistry.json: interp's 10% of the size must hold 24576 + a 448-byte
# bucket (16-byte keys, 64-byte values): 250240
expect check-size-smallest-share 0 'interp: 24.4 KiB of 250240 per node' -- \
    check --size 250240 "$chem"
expect check-size-smallest-share-less 1 '--size=250239 is below the smallest usable size, 250240: counters for 64 ranks and one bucket in each table, after its tier (buckets of chemistry: 832 bytes, interp: 448 bytes)' -- \
    check --size 250239 "$chem"
expect check-size-unit 1 '--size=0.1M is below the smallest usable size, 1M (250240 bytes)' -- \
    check --size 0.1M "$chem"
# fewer ranks' counters: one page of them, 4096 + 832
expect check-ranks 1 '--size=4K is below the smallest usable size, 5K (4928 bytes): counters for 1 ranks' -- \
    check --size 4K --ranks 1 "$minimal"
expect check-ranks-smallest 0 'cache: 4.8 KiB of 4928 per node' -- \
    check --size 4928 --ranks 1 "$minimal"
expect check-ranks-no-size 2 'check: --ranks 8 needs --size' -- \
    check --ranks 8 "$minimal"
expect check-ranks-zero 2 'check: --ranks 0: give a rank count from 1 to 65536' -- \
    check --size 1G --ranks 0 "$minimal"
# Large values (up to 1 MiB; keys up to 64 KiB) and far_read.  states'
# bucket: a 64-byte header and four slots of a 65536-byte key, a
# 1048576-byte value and an 8-byte checksum, 4456544 bytes, in whole
# cache lines 4456576; with 64 ranks' counters it needs 16384 more.
# neighbourhoods: their bytes, members and coarse key in the summary, and
# the digits each field keeps in the normalized config
near="$src/tests/config/good/near.json"
expect check-near 0 'chem: 4.0 GiB of 8G per node, tier 512.0 MiB, near 1.0 GiB (20 members, 32-byte coarse keys)' -- \
    check --size 8G "$near"
expect check-near-digits 0 '"Mg": 3,' -- check "$near"
expect check-near-bad 1 "near-members-zero.json: tables.t.near.members: 0 is out of range 1..64" -- \
    check "$src/tests/config/bad/near-members-zero.json"
large="$src/tests/config/good/large-values.json"
expect check-large-values 0 '"value_size": 1048576' -- check "$large"
expect check-far-read 0 '"far_read": "slot"' -- check "$large"
expect check-far-read-default 0 '"far_read": "auto"' -- check "$minimal"
expect check-large-values-size 0 'states: 256.0 MiB of 1G per node' -- \
    check --size 1G "$large"
expect check-large-values-too-small 1 'large-values.json: tables.states.size: 4.0 MiB cannot hold counters for 64 ranks and one bucket of 4456576 bytes (4 slots of 65536-byte keys and 1048576-byte values): it needs 4481152 bytes' -- \
    check --size 16M "$large"
expect check-value-over-limit 1 'value-size-over-limit.json: tables.t.value.value_size: 1048577 is more than the largest value, 1048576 bytes' -- \
    check "$src/tests/config/bad/value-size-over-limit.json"
expect check-bad-far-read 1 "bad-far-read.json: tables.t.far_read: 'slots' is not one of: auto, bucket, slot" -- \
    check "$src/tests/config/bad/bad-far-read.json"
expect check-bad 1 "many-problems.json: version: 3 is not supported" -- check "$src/tests/config/bad/many-problems.json"
expect check-bad-lines 1 "tables.t.key.fields[0].digits: 40 is out of range 1..17" -- \
    check "$src/tests/config/bad/many-problems.json"
expect check-missing 1 'cannot read: No such file or directory' -- \
    check /nonexistent.json
expect check-bad-size 2 "--size: '8Gb' is not a size" -- check --size 8Gb "$chem"
expect check-no-file 2 'check: needs a FILE' -- check
expect no-command 2 'needs a command' --
expect unknown-command 2 "unknown command 'frob': expected check or key" -- frob
expect help 0 'Usage: mpikvs-config check' -- --help
expect version 0 'mpikvs-config ' -- --version

expect key-text 0 'key: H=1.2346e-03 O=5.0000e-01 Charge=0 C=2.5000e+00 Ca=0 Cl=1.0000e-04 Mg=1.0000e+05 Calcite=1.0000e-12 Dolomite=0 dt=6.00e+02' -- \
    key "$chem" chemistry 1.234567e-3 0.5 -1e-13 2.5 0 0.0001 99999.96 1e-12 3e-300 600
expect key-hex 0 'hex: 3a3000000000a031' -- \
    key "$chem" chemistry 1.234567e-3 0.5 -1e-13 2.5 0 0.0001 99999.96 1e-12 3e-300 600
# values equal within the digits give the same key, byte for byte
a=$("$cfg" key "$chem" chemistry 1.23456e-3 1 1 1 1 1 1 1 1 600 | tail -n 1)
b=$("$cfg" key "$chem" chemistry 1.234564e-3 1 1 1 1 1 1 1 1 600.4 | tail -n 1)
c=$("$cfg" key "$chem" chemistry 1.23466e-3 1 1 1 1 1 1 1 1 600 | tail -n 1)
if [ "$a" = "$b" ] && [ "$a" != "$c" ]; then
    pass=$((pass + 1))
else
    echo "FAIL key-equal-within-digits: '$a' '$b' '$c'"
    fail=$((fail + 1))
fi
expect key-count 1 "table 'chemistry' has 10 key fields, 2 values given" -- \
    key "$chem" chemistry 1 2
expect key-nan 1 'field 9 (dt): nan is not a number' -- \
    key "$chem" chemistry 1 1 1 1 1 1 1 1 1 nan
expect key-junk 1 "value 0 (H): '1,5' is not a number" -- \
    key "$chem" chemistry 1,5 1 1 1 1 1 1 1 1 1
expect key-huge 1 "'1e400' is too large for a double" -- \
    key "$chem" chemistry 1e400 1 1 1 1 1 1 1 1 1
expect key-raw 1 "table 'interp' has a raw key of 16 bytes, no fields" -- \
    key "$chem" interp 1
expect key-no-table 1 "has no table 'chem' (it has: chemistry interp)" -- \
    key "$chem" chem 1

echo "mpikvs-config: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
