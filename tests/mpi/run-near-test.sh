#!/bin/sh
#
# run-near-test.sh - neighbourhoods (tests/mpi/test_near.c) at np 2 on 2
# virtual nodes: over ucx mapping the other node's region, over ucx with
# UCX_TLS=tcp,self (as across hosts without RDMA: the neighbourhoods'
# table reads its buckets by RMA there, keys of the table are shipped),
# and over the mpi transport (osc pt2pt); lock-free, and in the lock
# modes once each.  The config is written here: a table "near" of two
# 4-digit double fields with near "coarser" 1 and 16 members, and a
# table "exact" of the same key without.  The regions go to a private
# directory, which must be empty at the end.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_near
plain_mpirun_scratch near
asan_x=
plain_mpirun_asan "$prog" && asan_x="-x ASAN_OPTIONS"
MPIKVS_VIRTUAL_NODES=2
export MPIKVS_VIRTUAL_NODES

config=$tmp/near.json
cat >"$config" <<'JSON'
{
  "version": 1,
  "tables": {
    "near": {
      "size": "50%",
      "key": { "fields": [ { "name": "x", "type": "double", "digits": 4 },
                           { "name": "y", "type": "double", "digits": 4 } ] },
      "value": { "fields": [ { "name": "v", "type": "double" },
                             { "name": "w", "type": "double" } ] },
      "near": { "coarser": 1, "members": 16, "size": "50%" }
    },
    "exact": {
      "size": "50%",
      "key": { "fields": [ { "name": "x", "type": "double", "digits": 4 },
                           { "name": "y", "type": "double", "digits": 4 } ] },
      "value": { "fields": [ { "name": "v", "type": "double" },
                             { "name": "w", "type": "double" } ] }
    }
  }
}
JSON

fail=0
start=$(date +%s)

# near PATH MODE: test_near MODE on 2 ranks, 2 virtual nodes, reaching
# the other node by PATH: mapped, shipped (ucx over tcp) or mpi.
near() {
    path=$1 mode=$2
    plain_mpirun_route "$path"
    t0=$(date +%s)
    plain_mpirun_run "np=2 vnodes=2 $path $mode: test_near" 2 "$mode" \
        "$config"
    echo "    ($(($(date +%s) - t0)) s)"
}

near mapped lockfree
near shipped lockfree
near mpi lockfree
near mapped fine-lock
near mpi coarse-lock

plain_mpirun_left
echo "near: total time $(($(date +%s) - start)) s"
[ "$fail" = 0 ]
