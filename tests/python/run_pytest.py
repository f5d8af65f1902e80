"""run_pytest.py OUTDIR PYTEST-ARGS... - pytest on this rank of an MPI
job, its output in OUTDIR/rank.N (the ranks' reports would interleave on
one terminal); exits with pytest's status.  tests/python/pytest.sh
starts it under mpirun."""
import os
import sys

from mpi4py import MPI

import pytest


def main():
    outdir = sys.argv[1]
    out = os.open(os.path.join(outdir, "rank.%d" % MPI.COMM_WORLD.rank),
                  os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    # no cache directory in the source tree: every rank would write it
    status = pytest.main(["-p", "no:cacheprovider"] + sys.argv[2:])
    sys.stdout.flush()
    sys.exit(int(status))


if __name__ == "__main__":
    main()
