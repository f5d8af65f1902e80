"""no_numpy.py - the module where NumPy is not installed (pytest.sh runs
it on 2 ranks): NumPy is made unimportable before mpikvs is imported, so
the batches return a memoryview of a bytearray shaped (n, value_size)
and a list of hits, round_keys takes lists of rows, and get_near returns
memoryviews (mpikvs_python(3), Buffers); argv: the example config, a
scratch directory.  Each rank prints "no_numpy: rank R: ok" or raises.
"""
import os
import sys

sys.modules["numpy"] = None     # import numpy now fails

from mpi4py import MPI          # noqa: E402

import mpikvs                   # noqa: E402

KS, VS, N = 16, 24, 5
# two double key fields, values of 16 bytes, neighbourhoods, every hit
# to verify
NEAR_CONFIG = """{ "version": 1, "tables": { "near": { "size": "50%",
  "verify": 1.0,
  "key": { "fields": [ { "name": "x", "type": "double", "digits": 4 },
                       { "name": "y", "type": "double", "digits": 4 } ] },
  "value": { "value_size": 16 },
  "near": { "coarser": 1, "members": 16, "size": "50%" } } } }
"""


def main():
    comm = MPI.COMM_WORLD
    rank = comm.rank
    keys = b"".join(bytes([rank, 0xCC]) + i.to_bytes(KS - 2, "little")
                    for i in range(N))
    values = b"".join(bytes([i]) * VS for i in range(N))
    with mpikvs.open(comm, key_size=KS, value_size=VS) as kvs:
        kvs.put_batch(keys, values)
        kvs.fence()
        got, hits = kvs.get_batch(keys)
        assert isinstance(got, memoryview) and got.shape == (N, VS), got
        assert hits == [True] * N, hits
        assert got.tobytes() == values
        out = bytearray(N * VS)         # the caller's buffer, filled
        got, hits = kvs.get_batch(keys, out)
        assert got is out and bytes(out) == values and all(hits)
        req = kvs.get_batch_start(keys)
        got, hits = req.wait()
        assert got.tobytes() == values and all(hits)
        comm.Barrier()
    # the table chemistry of the example config: 10 inputs a key
    rows = [[1e-3 * (r + 1)] * 9 + [60.0] for r in range(2)]
    with mpikvs.open(comm, config=sys.argv[1], table="chemistry") as kvs:
        rk = kvs.round_keys(rows)
        assert isinstance(rk, memoryview) and rk.shape == (2, kvs.key_size)
        flat = rk.tobytes()
        for r, row in enumerate(rows):
            assert flat[r * kvs.key_size:(r + 1) * kvs.key_size] == kvs.round_key(row)
    # get_near: memoryviews of doubles and bytes; get_batch's codes a list
    path = "%s/no-numpy-near-%d.json" % (sys.argv[2], rank)
    with open(path, "w") as f:
        f.write(NEAR_CONFIG)
    with mpikvs.open(comm, config=path, verify=True) as kvs:
        k = kvs.round_key([1.001, 2.001])
        kvs.put(k, b"\x01" * 16)
        kvs.fence()
        dist, inputs, vals, ks = kvs.get_near(k, 4)
        assert isinstance(dist, memoryview) and dist.format == "d"
        assert inputs.shape == (len(dist), 2) and inputs.format == "d"
        assert vals.shape == (len(dist), 16) and ks.shape == (len(dist), 16)
        assert [round(x, 6) for x in inputs.tolist()[0]] == [1.001, 2.001]
        _, codes = kvs.get_batch(k, status=True)
        assert codes == [mpikvs.VERIFY], codes
        kvs.verify_report(k, 0.0)
        comm.Barrier()
    os.unlink(path)
    print("no_numpy: rank %d: ok" % rank)


if __name__ == "__main__":
    main()
