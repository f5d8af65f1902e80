"""test_mpikvs.py - the Python module mpikvs under pytest, on every rank
of an MPI job (tests/python/pytest.sh starts it at np 2 through
run_pytest.py).  The tests run in file order on every rank, so their
collective calls (open, close, fence, save, load, stats('job')) meet.

Environment: MPIKVS_TEST_SRCDIR, the source tree (for the example config
and the statistics' header); MPIKVS_TEST_SCRATCH, a directory every rank
sees (for save and load).
"""
import ctypes
import os
import re
import threading
import time

import numpy as np
import pytest
from mpi4py import MPI

import mpikvs

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.rank, COMM.size
KS, VS = 16, 24
SRCDIR = os.environ.get("MPIKVS_TEST_SRCDIR", ".")
SCRATCH = os.environ.get("MPIKVS_TEST_SCRATCH", "/tmp")
CHEMISTRY = os.path.join(SRCDIR, "etc", "examples", "chemistry.json")


def key(rank, i):
    """A key of KS bytes only rank puts: its rank and i."""
    return bytes([rank, 0xAA]) + i.to_bytes(KS - 2, "little")


def value(rank, i):
    """The value rank puts under key(rank, i)."""
    return bytes([rank, 0x55]) + i.to_bytes(VS - 2, "little")


def keys_array(rank, n, start=0):
    """n keys of rank as an n x KS uint8 array"""
    return np.frombuffer(b"".join(key(rank, i) for i in range(start, start + n)),
                         np.uint8).reshape(n, KS)


def values_array(rank, n, start=0):
    return np.frombuffer(b"".join(value(rank, i) for i in range(start, start + n)),
                         np.uint8).reshape(n, VS)


@pytest.fixture
def kvs():
    with mpikvs.open(COMM, key_size=KS, value_size=VS) as handle:
        yield handle


def test_hit_miss_none(kvs):
    assert (kvs.key_size, kvs.value_size) == (KS, VS)
    assert kvs.transport in ("ucx", "mpi")
    kvs.put(key(RANK, 1), value(RANK, 1))
    kvs.fence()
    for r in range(SIZE):       # own and other ranks' keys
        assert kvs.get(key(r, 1)) == value(r, 1)
    assert kvs.get(key(RANK, 2)) is None        # never put
    # any buffer: bytearray, memoryview, NumPy
    assert kvs.get(bytearray(key(RANK, 1))) == value(RANK, 1)
    assert kvs.get(memoryview(key(RANK, 1))) == value(RANK, 1)
    assert kvs.get(np.frombuffer(key(RANK, 1), np.uint8)) == value(RANK, 1)


def test_out_buffer(kvs):
    kvs.put(key(RANK, 3), value(RANK, 3))
    out = bytearray(VS)
    assert kvs.get(key(RANK, 3), out=out) is out
    assert bytes(out) == value(RANK, 3)
    arr = np.zeros(VS, np.uint8)
    assert kvs.get(key(RANK, 3), arr) is arr
    assert arr.tobytes() == value(RANK, 3)
    assert kvs.get(key(RANK, 4), out=out) is None
    with pytest.raises(mpikvs.InvalError, match="out: a C-contiguous, writable"):
        kvs.get(key(RANK, 3), out=bytes(VS))        # read-only
    with pytest.raises(mpikvs.InvalError, match="out: 5 bytes"):
        kvs.get(key(RANK, 3), out=bytearray(5))


def test_put_if_absent(kvs):
    k = key(RANK, 5)
    assert kvs.put_if_absent(k, value(RANK, 5)) is True
    present = bytearray(VS)
    assert kvs.put_if_absent(k, value(RANK, 6), present=present) is False
    assert bytes(present) == value(RANK, 5)
    assert kvs.get(k) == value(RANK, 5)


def test_wrong_sizes(kvs):
    with pytest.raises(mpikvs.InvalError) as e:
        kvs.put(b"abc", value(RANK, 1))
    assert "key: 3 bytes, but the handle's key_size is %d" % KS in str(e.value)
    assert e.value.code == mpikvs.ERR_INVAL
    assert "key: 3 bytes" in e.value.text
    assert isinstance(e.value, ValueError)
    with pytest.raises(mpikvs.InvalError, match="value: %d bytes, but the handle's value_size is %d" % (VS + 1, VS)):
        kvs.put(key(RANK, 1), b"v" * (VS + 1))
    with pytest.raises(mpikvs.InvalError, match="key: 17 bytes"):
        kvs.get(b"k" * 17)
    with pytest.raises(TypeError, match="key: a bytes-like object is required, not 'str'"):
        kvs.get("a string")


def test_non_contiguous(kvs):
    keys = np.zeros((KS, 2), np.uint8)[:, 0]        # every other byte
    assert not keys.flags.c_contiguous
    with pytest.raises(mpikvs.InvalError, match="key: a C-contiguous buffer is required"):
        kvs.get(keys)
    batch = np.zeros((4, 2 * KS), np.uint8)[:, :KS]
    with pytest.raises(mpikvs.InvalError, match="keys: a C-contiguous buffer is required"):
        kvs.get_batch(batch)


def test_not_a_comm():
    with pytest.raises(TypeError, match="comm: an mpi4py.MPI.Comm is required, not 'int'"):
        mpikvs.open(42, key_size=KS, value_size=VS)
    with pytest.raises(TypeError, match="comm: .* not 'str'"):
        mpikvs.open("world")
    with pytest.raises(TypeError, match="bogus"):
        mpikvs.open(COMM, key_size=KS, value_size=VS, bogus=1)
    with pytest.raises(TypeError):
        mpikvs.open(COMM, KS, VS)       # options are keyword-only


def test_unknown_mode():
    with pytest.raises(mpikvs.InvalError) as e:
        mpikvs.open(COMM, key_size=KS, value_size=VS, mode="bogus")
    assert "bogus" in e.value.text
    assert e.value.text in str(e.value)
    assert str(e.value).startswith("mpikvs_open: invalid argument: ")


def test_closed_handle():
    h = mpikvs.open(COMM, key_size=KS, value_size=VS)
    assert not h.closed
    h.close()
    assert h.closed
    h.close()                   # again: nothing
    for call in (lambda: h.get(key(RANK, 1)),
                 lambda: h.put(key(RANK, 1), value(RANK, 1)),
                 lambda: h.get_batch(keys_array(RANK, 2)),
                 lambda: h.fence(), lambda: h.stats(), lambda: h.key_size):
        with pytest.raises(mpikvs.InvalError, match="the handle is closed"):
            call()


def test_context_manager():
    with mpikvs.open(COMM, key_size=KS, value_size=VS) as h:
        assert isinstance(h, mpikvs.Handle)
        h.put(key(RANK, 1), value(RANK, 1))
    assert h.closed
    with pytest.raises(KeyError):
        with mpikvs.open(COMM, key_size=KS, value_size=VS) as h:
            raise KeyError("closes on the way out")
    assert h.closed


def test_batches_numpy(kvs):
    n = 1000
    kvs.put_batch(keys_array(RANK, n), values_array(RANK, n))
    kvs.fence()
    other = (RANK + 1) % SIZE
    # own keys, the other rank's, and keys never put
    keys = np.concatenate([keys_array(RANK, n), keys_array(other, n),
                           keys_array(RANK, n, start=10 * n)])
    values, hits = kvs.get_batch(keys)
    assert values.shape == (3 * n, VS) and values.dtype == np.uint8
    assert hits.dtype == np.bool_ and hits.shape == (3 * n,)
    assert hits[:2 * n].all() and not hits[2 * n:].any()
    assert (values[:n] == values_array(RANK, n)).all()
    assert (values[n:2 * n] == values_array(other, n)).all()
    # the caller's buffer, filled in place
    mine = np.zeros((n, VS), np.uint8)
    got, hits = kvs.get_batch(keys_array(other, n), mine)
    assert got is mine and hits.all()
    assert (mine == values_array(other, n)).all()
    with pytest.raises(mpikvs.InvalError, match="keys: %d bytes, not a multiple of the handle's key_size %d" % (KS + 1, KS)):
        kvs.get_batch(np.zeros(KS + 1, np.uint8))
    with pytest.raises(mpikvs.InvalError, match="values: "):
        kvs.put_batch(keys_array(RANK, 2), np.zeros((3, VS), np.uint8))
    # an empty batch
    values, hits = kvs.get_batch(np.zeros((0, KS), np.uint8))
    assert len(hits) == 0


def test_started_batches(kvs):
    n = 500
    req = kvs.put_batch_start(keys_array(RANK, n), values_array(RANK, n))
    assert isinstance(req, mpikvs.Request)
    assert req.wait() is None and req.done
    kvs.fence()
    keys = keys_array((RANK + 1) % SIZE, n)
    req = kvs.get_batch_start(keys)
    if not req.done:
        with pytest.raises(mpikvs.InvalError, match="in flight"):
            req.result()
    for _ in range(10_000_000):     # bounded poll
        if req.test():
            break
    assert req.done
    values, hits = req.result()
    assert hits.all() and (values == values_array((RANK + 1) % SIZE, n)).all()
    assert req.wait()[1].all()      # complete: the same result again
    # dropped in flight: waited for in its dealloc, the buffers kept
    req = kvs.get_batch_start(keys)
    del req
    # in flight at close: close completes it first
    req2 = kvs.get_batch_start(keys)
    kvs.close()
    assert req2.done and req2.result()[1].all()


def test_round_key():
    with mpikvs.open(COMM, config=CHEMISTRY, table="chemistry") as kvs:
        x = [1e-3 * (f + 1) for f in range(9)] + [60.0]
        k = kvs.round_key(x)
        assert isinstance(k, bytes) and len(k) == kvs.key_size
        # the ninth digit is rounded away
        assert kvs.round_key([v * (1 + 1e-9) for v in x[:9]] + [60.0]) == k
        assert kvs.round_key(np.array(x)) == k
        rows = np.array([x, [2 * v for v in x]])
        keys = kvs.round_keys(rows)
        assert keys.shape == (2, kvs.key_size) and keys.dtype == np.uint8
        assert keys[0].tobytes() == k and keys[1].tobytes() != k
        assert (kvs.round_keys([x, x]) == keys[[0, 0]]).all()    # lists
        with pytest.raises(mpikvs.InvalError):
            kvs.round_key(x[:9])                # not the field count
        with pytest.raises(mpikvs.InvalError):
            kvs.round_key(x[:9] + [float("nan")])
        values, hits = kvs.get_batch(keys)
        assert not hits.any()


def statistic_names():
    """The names of mpikvs_statistics.h's X-macro lines, in order."""
    with open(os.path.join(SRCDIR, "include", "mpikvs_statistics.h")) as f:
        return re.findall(r"^\s*X\((\w+),", f.read(), re.M)


def test_stats(kvs):
    names = statistic_names()
    assert len(names) >= 20
    kvs.put(key(RANK, 7), value(RANK, 7))
    kvs.get(key(RANK, 7))
    kvs.get(key(RANK, 8))
    st = kvs.stats(since="open")
    assert list(st) == names
    assert (st["gets"], st["hits"], st["misses"], st["puts"]) == (2, 1, 1, 1)
    job = kvs.stats(scope="job", since="open")
    assert (job["gets"], job["hits"]) == (2 * SIZE, SIZE)
    assert kvs.stats("node")["gets"] >= 2
    with pytest.raises(mpikvs.InvalError, match="scope: 'bogus'"):
        kvs.stats(scope="bogus")
    with pytest.raises(mpikvs.InvalError, match="since: 'never'"):
        kvs.stats(since="never")


def test_save_load():
    n = 100
    path = os.path.join(SCRATCH, "save.kvs")
    with mpikvs.open(COMM, key_size=KS, value_size=VS) as kvs:
        kvs.put_batch(keys_array(RANK, n), values_array(RANK, n))
        kvs.fence()
        kvs.save(path)
    assert os.path.getsize(path) > 0
    with mpikvs.open(COMM, key_size=KS, value_size=VS) as kvs:
        report = kvs.load(path)
        assert report == {"entries": n * SIZE, "loaded": n * SIZE,
                          "not_fitting": 0}
        for r in range(SIZE):
            values, hits = kvs.get_batch(keys_array(r, n))
            assert hits.all() and (values == values_array(r, n)).all()
        with pytest.raises(mpikvs.NotemptyError) as e:
            kvs.load(path)
        assert e.value.code == mpikvs.ERR_NOTEMPTY and e.value.text
        assert kvs.load(path, merge=True)["entries"] == n * SIZE
        with pytest.raises(mpikvs.Error):
            kvs.load(os.path.join(SCRATCH, "no-such-file"))


def test_counters(kvs):
    assert kvs.counters == 4
    before = kvs.counter_add(0, 1)
    assert 0 <= before < SIZE
    COMM.Barrier()
    assert kvs.counter_add(0, 0) == SIZE
    if RANK == 0:
        assert kvs.counter_cas(1, 0, 42) == 0
    COMM.Barrier()
    assert kvs.counter_add(1, 0) == 42
    assert kvs.counter_cas(1, 7, 8) == 42       # not 7: nothing stored
    COMM.Barrier()
    assert kvs.counter_add(1, 0) == 42
    with pytest.raises(mpikvs.InvalError):
        kvs.counter_add(99, 1)
    assert "99" in kvs.last_error


def test_one_thread_at_a_time(kvs):
    """A second thread's call while the first is in one (the GIL
    released) raises InvalError rather than racing it in the library.
    Rank 0's thread waits in a fence that rank 1 joins only once rank 0's
    main thread was refused, so the refusal does not depend on timing."""
    if RANK == 0:
        fenced = []
        thread = threading.Thread(target=lambda: fenced.append(kvs.fence()))
        thread.start()
        refused = None
        deadline = time.monotonic() + 60
        while refused is None and time.monotonic() < deadline:
            try:
                kvs.get(key(RANK, 1))       # served until the fence began
            except mpikvs.InvalError as e:
                refused = str(e)
        for r in range(1, SIZE):            # now the others join the fence
            COMM.send(True, dest=r)
        thread.join()
        assert refused is not None and "in use by another thread" in refused
        assert fenced == [None]
    else:
        COMM.recv(source=0)
        kvs.fence()
    assert kvs.get(key(RANK, 1)) is None    # the handle is fine after
    # over the mpi transport a get needs its target in MPI: stay there
    # until the other rank's gets are done
    COMM.Barrier()


class SizedOptions(ctypes.Structure):
    """mpikvs_options_t as a binding declares it (mpikvs(3)): the first
    sized version's fields, up to transport."""
    _fields_ = [("size", ctypes.c_size_t), ("key_size", ctypes.c_size_t),
                ("value_size", ctypes.c_size_t),
                ("size_per_node", ctypes.c_size_t),
                ("mode", ctypes.c_char_p), ("config", ctypes.c_char_p),
                ("table", ctypes.c_char_p),
                ("slots_per_bucket", ctypes.c_uint),
                ("transport", ctypes.c_char_p)]


def test_ctypes_sized_options():
    """mpikvs(3)'s rule for a binding that declares the options itself
    (ctypes, ISO_C_BINDING): size is its own declaration's size and the
    library takes the default of every field past it; a size below the
    first sized version's, or a larger one with bytes past the library's
    struct that are not 0, is refused."""
    path = next(line.split()[-1] for line in open("/proc/self/maps")
                if "/libmpikvs.so" in line)     # the one the module loaded
    lib = ctypes.CDLL(path)
    comm_t = (ctypes.c_void_p if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_void_p)
              else ctypes.c_int)
    lib.mpikvs_open.argtypes = [comm_t, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    for f in ("mpikvs_put", "mpikvs_get"):
        getattr(lib, f).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    lib.mpikvs_fence.argtypes = [ctypes.c_void_p]
    lib.mpikvs_close.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.mpikvs_last_error.argtypes = [ctypes.c_void_p]
    lib.mpikvs_last_error.restype = ctypes.c_char_p
    comm = comm_t(MPI._handleof(COMM))

    def open_with(size, tail=b""):
        """mpikvs_open with SizedOptions of size bytes, tail after them"""
        buf = ctypes.create_string_buffer(bytes(SizedOptions(size, KS, VS)) + tail)
        handle = ctypes.c_void_p()
        return lib.mpikvs_open(comm, buf, ctypes.byref(handle)), handle

    rc, h = open_with(ctypes.sizeof(SizedOptions))
    assert rc == mpikvs.OK, lib.mpikvs_last_error(None)
    assert lib.mpikvs_put(h, key(RANK, 7), value(RANK, 7)) == mpikvs.OK
    assert lib.mpikvs_fence(h) == mpikvs.OK
    out = ctypes.create_string_buffer(VS)
    for r in range(SIZE):
        assert lib.mpikvs_get(h, key(r, 7), out) == mpikvs.OK
        assert out.raw == value(r, 7)
    assert lib.mpikvs_close(ctypes.byref(h)) == mpikvs.OK
    rc, _ = open_with(ctypes.sizeof(SizedOptions) - 8)
    assert rc == mpikvs.ERR_INVAL
    assert b"smaller than the first sized options" in lib.mpikvs_last_error(None)
    rc, _ = open_with(ctypes.sizeof(SizedOptions) + 4096, b"\0" * 4095 + b"\1")
    assert rc == mpikvs.ERR_INVAL
    COMM.Barrier()


def test_errors_from_return_codes():
    assert issubclass(mpikvs.Error, Exception)
    assert issubclass(mpikvs.InvalError, ValueError)
    assert issubclass(mpikvs.ErrnoError, OSError)
    assert (mpikvs.OK, mpikvs.MISS, mpikvs.PRESENT) == (0, 1, 2)
    errs = [n for n in dir(mpikvs) if n.startswith("ERR_")]
    assert "ERR_STALLED" in errs and len(errs) >= 21
    for n in errs:
        cls = getattr(mpikvs, "".join(w.capitalize() for w in n[4:].split("_")) + "Error")
        assert issubclass(cls, mpikvs.Error)
        assert cls.__doc__ == mpikvs.strerror(getattr(mpikvs, n))
    assert mpikvs.StalledError.__name__ == "StalledError"
    assert mpikvs.strerror(mpikvs.OK) == "success"
    assert mpikvs.version == mpikvs.__version__


def test_docstrings():
    """Every function, class, method and property of the module says
    what it does (mpikvs_python(3) sends the reader to help(mpikvs))."""
    missing = []
    for name in dir(mpikvs):
        obj = getattr(mpikvs, name)
        if name.startswith("_") or isinstance(obj, (int, str)):
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and not (member.__doc__ or "").strip():
                    missing.append(name + "." + attr)
    assert not missing


# A table of two 4-digit double key fields with neighbourhoods one digit
# coarser and every hit returned for verifying (mpikvs.json(5) "near",
# "verify"); test_surrogates writes it.
SURROGATE_CONFIG = """{
  "version": 1,
  "tables": {
    "near": {
      "size": "50%", "verify": 1.0,
      "key": { "fields": [ { "name": "x", "type": "double", "digits": 4 },
                           { "name": "y", "type": "double", "digits": 4 } ] },
      "value": { "fields": [ { "name": "v", "type": "double" },
                             { "name": "w", "type": "double" } ] },
      "near": { "coarser": 1, "members": 16, "size": "50%" }
    }
  }
}
"""


def surrogate_points(rank):
    """The 4 points rank puts: (a + i/1000, b + j/1000), i, j in 1..2, of
    its cell (a, b), which round to it at 3 digits without a tie."""
    a, b = 1.0 + 0.1 * rank, 2.0
    return [(a + 0.001 * (1 + p % 2), b + 0.001 * (1 + p // 2)) for p in range(4)]


def surrogate_value(xy):
    return np.array([3.0 * xy[0], xy[1] * xy[1]], np.float64)


def test_surrogates():
    """forget, verify_report, clear, get_near, near_inputs, the verify
    option and the surrogate statistics, across the ranks."""
    path = os.path.join(SCRATCH, "surrogates-%d.json" % RANK)
    with open(path, "w") as f:
        f.write(SURROGATE_CONFIG)
    with pytest.raises(mpikvs.InvalError, match="verify: 2"):
        mpikvs.open(COMM, config=path, verify=2.0)
    with mpikvs.open(COMM, config=path, verify=True) as kvs:
        assert kvs.near_inputs == 2 and kvs.value_size == 16
        mine = [kvs.round_key(p) for p in surrogate_points(RANK)]
        for k, p in zip(mine, surrogate_points(RANK)):
            kvs.put(k, surrogate_value(p))
        kvs.fence()
        # every hit a verify hit (verify 1.0): the value given, reported
        for k, p in zip(mine, surrogate_points(RANK)):
            rc, v = kvs.get(k, status=True)
            assert rc == mpikvs.VERIFY and v == surrogate_value(p).tobytes()
            kvs.verify_report(k, 1e-7)
        with pytest.raises(mpikvs.InvalError):
            kvs.verify_report(mine[0], 1e-7)        # reported already
        values, codes = kvs.get_batch(np.frombuffer(b"".join(mine), np.uint8),
                                      status=True)
        assert list(codes) == [mpikvs.VERIFY] * 4
        assert kvs.get_batch(np.frombuffer(b"".join(mine), np.uint8))[1].all()
        st = kvs.stats(since="open")
        assert st["verify_hits"] == 12 and st["verify_reports"] == 4
        assert isinstance(st["verify_error_max"], float)
        assert st["verify_error_max"] == pytest.approx(1e-7)
        assert st["verify_error_sum"] == pytest.approx(4e-7)
        assert st["verify_below_1e_6"] == 4
        # every rank's neighbourhood from a point nobody put: its points
        # (a member may be missing, mpikvs_get_near(3)), nearest first,
        # each with its own value and key
        for r in range(SIZE):
            a, b = surrogate_points(r)[0]
            found = kvs.get_near(kvs.round_key((a + 0.003, b + 0.003)), 16)
            assert found is not None
            dist, inputs, vals, keys = found
            assert 1 <= len(dist) <= 4 and list(dist) == sorted(dist)
            assert set(map(tuple, inputs.round(6).tolist())) <= \
                set(tuple(round(c, 6) for c in p) for p in surrogate_points(r))
            for i in range(len(dist)):
                assert np.allclose(vals[i].view(np.float64),
                                   surrogate_value(inputs[i]), rtol=1e-12)
                assert keys[i].tobytes() == kvs.round_key(inputs[i])
        assert 1 <= len(kvs.get_near(kvs.round_key((a, b)), 2)[0]) <= 2
        assert kvs.get_near(kvs.round_key((7.5, 8.5)), 4) is None
        with pytest.raises(mpikvs.InvalError, match="max: 0"):
            kvs.get_near(mine[0], 0)
        # forget: a miss, and the member gone from its neighbourhood
        assert kvs.forget(mine[0]) is True
        assert kvs.forget(mine[0]) is False
        assert kvs.get(mine[0]) is None
        kvs.fence()
        for r in range(SIZE):
            a, b = surrogate_points(r)[0]
            dist, inputs, _, _ = kvs.get_near(kvs.round_key((a + 0.003, b + 0.003)), 16)
            assert len(dist) <= 3 and (round(a, 6), round(b, 6)) not in \
                map(tuple, inputs.round(6).tolist())
        assert kvs.stats(since="open")["forgotten"] == 1
        kvs.clear()
        for k in mine:
            assert kvs.get(k, status=True) == (mpikvs.MISS, None)
        assert kvs.get_near(mine[1], 16) is None
    os.unlink(path)
