"""bench.py [N [REPS]] - the Python module's cost over C's (not run by
the suite): each rank puts N keys of 80 bytes with values of 104, then
times get_batch of all N (NumPy arrays), REPS times, and N single gets,
as tests/python/bench-c (make check builds it) does in C.  Rank 0
prints keys/s of the best batch and ns per single get.  Back to back,
at np 2 on one node:

    mpirun -np 2 build/tests/python/bench-c
    PYTHONPATH=build/python/.libs mpirun -x PYTHONPATH -np 2 python3 tests/python/bench.py
"""
import sys
import time

import numpy as np
from mpi4py import MPI

import mpikvs

KS, VS = 80, 104


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 65536
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    comm = MPI.COMM_WORLD
    with mpikvs.open(comm, key_size=KS, value_size=VS,
                     size_per_node=256 << 20) as kvs:
        # key i of rank r: i in its first 8 bytes, r in the ninth
        keys = np.zeros((n, KS), np.uint8)
        keys[:, :8] = np.arange(n, dtype=np.uint64).view(np.uint8).reshape(n, 8)
        keys[:, 8] = comm.rank
        values = np.repeat((np.arange(n) & 0xff).astype(np.uint8)[:, None],
                           VS, axis=1)
        kvs.put_batch(keys, values)
        kvs.fence()
        out = np.empty((n, VS), np.uint8)
        best = float("inf")
        for _ in range(reps):
            comm.Barrier()
            t = time.perf_counter()
            out, hits = kvs.get_batch(keys)
            best = min(best, time.perf_counter() - t)
        # a few keys may have been evicted from a full bucket
        assert hits.mean() > 0.99 and (out[hits] == values[hits]).all()
        rows = [keys[i].tobytes() for i in range(n)]
        get = kvs.get
        single = loop = float("inf")
        for _ in range(5):
            comm.Barrier()
            t = time.perf_counter()
            found = sum(get(k) is not None for k in rows)
            single = min(single, time.perf_counter() - t)
            # the loop's own cost: the same loop without the call
            t = time.perf_counter()
            sum(k is not None for k in rows)
            loop = min(loop, time.perf_counter() - t)
    if comm.rank == 0:
        print("bench.py: get_batch of %d keys: %.3g keys/s (best of %d); "
              "get: %.0f ns per call (%.0f ns without the loop; best of 5), %d hits"
              % (n, n / best, reps, 1e9 * single / n,
                 1e9 * (single - loop) / n, found))


if __name__ == "__main__":
    main()
