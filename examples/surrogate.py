#!/usr/bin/env python3
"""surrogate.py - mpikvs from Python as a surrogate cache, a batch at a time.

    mpirun -np 4 python3 surrogate.py PREFIX/share/doc/mpikvs/examples/chemistry.json

The pattern of batches.c with mpi4py and NumPy: each step rounds the
inputs of all 500 cells to keys at once (round_keys), looks them all up
in one batch (get_batch), computes only the misses, stores them in one
batch (put_batch), and ends with a fence.  The table "chemistry" of the
example chemistry.json (mpikvs.json(5)): ten float inputs, 13 of
result; the key's size is the table's, asked of the handle.  Rank 0
prints the job's hit rate.  The module's page is mpikvs_python(3).
"""
import sys

import numpy as np
from mpi4py import MPI

import mpikvs

NIN = 10        # key fields of the table
NOUT = 13       # value fields of the table
NCELLS = 500    # cells of this rank
NSTEPS = 10


def inputs(rank, step):
    """The inputs of every cell at a step, as batches.c's: many cells
    share a state, and the ranks differ in the ninth digit only, which
    the rounding removes."""
    state = (np.arange(NCELLS) + step) % 50
    f = np.arange(NIN - 1)
    x = np.empty((NCELLS, NIN))
    x[:, :NIN - 1] = (1e-3 * (1 + state)[:, None] * (f + 1)[None, :]
                      * (1 + 1e-9 * rank))
    x[:, NIN - 1] = 60.0    # the time step
    return x


def solve(x):
    """The expensive call the cache stands in for, on rows of inputs."""
    j = np.arange(NOUT)
    c = x[:, j % (NIN - 1)]
    return c / (1.0 + c * c) + 1e-3 * j[None, :] * x[:, NIN - 1:NIN]


def main():
    comm = MPI.COMM_WORLD
    config = sys.argv[1] if len(sys.argv) > 1 else None
    with mpikvs.open(comm, config=config, table="chemistry") as kvs:
        for step in range(NSTEPS):
            x = inputs(comm.rank, step)
            keys = kvs.round_keys(x)            # NCELLS x key_size uint8
            values, hits = kvs.get_batch(keys)  # NCELLS x value_size uint8
            out = values.view(np.float64)       # the hits' results
            miss = ~hits
            if miss.any():
                new_out = solve(x[miss])
                out[miss] = new_out
                kvs.put_batch(np.ascontiguousarray(keys[miss]),
                              np.ascontiguousarray(new_out).view(np.uint8))
            kvs.fence()
        st = kvs.stats(scope="job", since="open")
    if comm.rank == 0:
        rate = 100.0 * st["hits"] / st["gets"] if st["gets"] else 0.0
        print("surrogate.py: gets %d, hits %d (%.1f %%)"
              % (st["gets"], st["hits"], rate))


if __name__ == "__main__":
    main()
