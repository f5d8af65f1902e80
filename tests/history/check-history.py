#!/usr/bin/env python3
"""check-history.py - check the histories of tests/history/history against
mpikvs's contract, key by key.

    check-history.py DIR        check DIR/rank-*.hist; exit 1 on a violation
    check-history.py --selftest feed crafted bad histories, expect each caught

What is checked (mpikvs(3), "Consistency modes", "When a put becomes
visible", "The node tier"):
  * every hit (get, batch get, started batch get, and the value a
    put-if-absent loser is shown) is a whole value of that key: its bytes
    are those its header (key id, writer, kind, sequence) derives, and its
    checksum matches -- never torn, never another key's;
  * it was written by a put (single, batch, started batch, or the winning
    put-if-absent) that started before the read returned; never a losing
    put-if-absent's value;
  * after a fence both sides passed (the put's epoch before the read's) a
    hit is not older than a put of that key that completed before the
    fence: not an earlier sequence number of the same writer, nor a value
    put in an earlier epoch than such a put.  The one exception is the
    node tier, as documented: with a tier, a key whose home is another
    node may be read with a value a rank of the reader's node hit in an
    earlier epoch (in "user" caching, only if no mpikvs_tier_invalidate
    came since);
  * put-if-absent: one winner per key, every loser shown its value;
  * counters: the final value (read after the last fence) equals the sum
    of the adds, and the values the adds saw form one chain (each add saw
    the sum of the adds before it); every CAS winner replaced a value no
    other winner replaced, and the CAS counter ends at the winners' count.

Times are CLOCK_MONOTONIC: comparable because all ranks ran on one host
(each history names its host; several hosts are refused).  Prints the
operations checked per kind, and each violation with the rank and line
of the history that shows it.  Python 3's standard library only.
"""
import glob
import os
import struct
import sys
import tempfile

MASK = (1 << 64) - 1
MPIKVS_OK, MPIKVS_MISS, MPIKVS_PRESENT = 0, 1, 2


def splitmix(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


def value_of(key, writer, kind, seq, size):
    """The bytes history.c's make_value writes."""
    v = bytearray(struct.pack("<QIIQ", key, writer, kind, seq))
    for i, _ in enumerate(range(24, size - 8, 8)):
        w = splitmix(((key * 0x100000001B3) & MASK) ^ (writer << 40)
                     ^ ((seq << 8) & MASK) ^ kind ^ ((i << 56) & MASK))
        v += struct.pack("<Q", w)
    v += struct.pack("<Q", fnv1a(v))
    return bytes(v)


_decoded = {}


def decode(hexval, size):
    """(key, writer, kind, seq, problem): problem is None for a whole
    value, else what is wrong with it."""
    got = _decoded.get(hexval)
    if got is not None:
        return got
    try:
        v = bytes.fromhex(hexval)
    except ValueError:
        v = b""
    if len(v) != size:
        got = (None, None, None, None, "a value of %d bytes, not %d"
               % (len(v), size))
    else:
        key, writer, kind, seq = struct.unpack_from("<QIIQ", v)
        (stored,) = struct.unpack_from("<Q", v, size - 8)
        if fnv1a(v[:size - 8]) != stored:
            problem = "torn value: its checksum does not match its bytes"
        elif kind > 1 or value_of(key, writer, kind, seq, size) != v:
            problem = ("torn value: its bytes are not those of (key %d, "
                       "writer %d, seq %d)" % (key, writer, seq))
        else:
            problem = None
        got = (key, writer, kind, seq, problem)
    _decoded[hexval] = got
    return got


class Op:
    __slots__ = ("rank", "line", "kind", "epoch", "t0", "t1", "rc", "args")

    def where(self):
        return "rank %d line %d (%s, epoch %d)" % (self.rank, self.line,
                                                   self.kind, self.epoch)


class History:
    def __init__(self):
        self.head = {}      # rank -> header dict
        self.ops = []       # every Op, rank by rank
        self.home = {}      # key -> home node
        self.errors = []
        self.counts = {}

    def error(self, text):
        self.errors.append(text)

    def count(self, what, n=1):
        self.counts[what] = self.counts.get(what, 0) + n


def load(directory):
    h = History()
    files = sorted(glob.glob(os.path.join(directory, "rank-*.hist")))
    if not files:
        h.error("no rank-*.hist in %s" % directory)
        return h
    for path in files:
        head = {}
        ended = False
        with open(path) as f:
            for n, text in enumerate(f, 1):
                w = text.split()
                if not w:
                    continue
                if w[0] == "end":
                    ended = True
                elif w[0] == "home":
                    h.home[int(w[1])] = int(w[2])
                elif len(w) == 2:
                    head[w[0]] = w[1]
                else:
                    op = Op()
                    op.rank = int(head.get("rank", -1))
                    op.line = n
                    op.kind = w[0]
                    op.epoch, op.t0, op.t1, op.rc = (int(x) for x in w[1:5])
                    op.args = w[5:]
                    h.ops.append(op)
        if not ended:
            h.error("%s: no end line: the history is cut (the rank died "
                    "or its file was not written whole)" % path)
        if "rank" not in head:
            h.error("%s: no header" % path)
            continue
        h.head[int(head["rank"])] = head
    sizes = {hd.get("size") for hd in h.head.values()}
    if len(sizes) != 1 or len(h.head) != int(sizes.pop() or 0):
        h.error("the histories are not those of one whole job: ranks %s"
                % sorted(h.head))
    hosts = {hd.get("host") for hd in h.head.values()}
    if len(hosts) > 1:
        h.error("histories of several hosts (%s): their CLOCK_MONOTONIC "
                "times cannot be compared" % ", ".join(sorted(hosts)))
    return h


class Put:
    __slots__ = ("key", "writer", "kind", "seq", "op")


def check(h):
    if h.errors and not h.ops:
        return
    any_head = next(iter(h.head.values()))
    size = int(any_head["value_size"])
    tier = any_head.get("tier", "off")
    node = {r: int(hd["node"]) for r, hd in h.head.items()}

    puts = {}           # (key, writer, kind, seq) -> Put
    losers = set()      # (key, writer, seq) of losing put-if-absents
    reads = []          # (op, key, hexvalue or None, from_get)
    pia = {}            # key -> [op]
    adds = {}           # counter -> [op]
    cas = []
    invals = {}         # epoch -> True
    last_epoch = max(op.epoch for op in h.ops)

    def add_put(op, key, kind, seq):
        p = Put()
        p.key, p.writer, p.kind, p.seq, p.op = key, op.rank, kind, seq, op
        puts[(key, op.rank, kind, seq)] = p

    for op in h.ops:
        h.count(op.kind)
        a = op.args
        if op.kind == "put":
            add_put(op, int(a[0]), 0, int(a[1]))
        elif op.kind in ("pb", "pbs"):
            for item in a:
                k, s = item.split(":")
                add_put(op, int(k), 0, int(s))
        elif op.kind == "get":
            reads.append((op, int(a[0]), None if a[1] == "-" else a[1], True))
        elif op.kind in ("gb", "gbs"):
            for item in a:
                k, v = item.split(":")
                reads.append((op, int(k), None if v == "-" else v, True))
        elif op.kind == "pia":
            key, seq = int(a[0]), int(a[1])
            pia.setdefault(key, []).append(op)
            if op.rc == MPIKVS_OK:
                add_put(op, key, 1, seq)
            elif op.rc == MPIKVS_PRESENT:
                losers.add((key, op.rank, seq))
                reads.append((op, key, a[2], False))
        elif op.kind == "add":
            adds.setdefault(int(a[0]), []).append(op)
        elif op.kind == "cas":
            cas.append(op)
        elif op.kind == "inval":
            invals[op.epoch] = True
        elif op.kind == "fence":
            pass
        else:
            h.error("%s: unknown operation" % op.where())
        if op.rc < 0:
            h.error("%s: returned error %d" % (op.where(), op.rc))

    # per key, the puts that completed (rc OK), by epoch
    done = {}
    for p in puts.values():
        if p.op.rc == MPIKVS_OK:
            done.setdefault(p.key, []).append(p)

    def newest_before(key, epoch):
        """The latest epoch of a completed put of key before epoch, and
        per writer its latest sequence number then."""
        last, seqs = -1, {}
        for q in done.get(key, ()):
            if q.op.epoch < epoch:
                last = max(last, q.op.epoch)
                seqs[q.writer] = max(seqs.get(q.writer, 0), q.seq)
        return last, seqs

    # remote hits by node, for the node tier's exception: (node, key,
    # writer, kind, seq) -> the epochs of such hits
    tier_hits = {}
    if tier != "off":
        for op, key, v, from_get in reads:
            if v is None or not from_get:
                continue
            k, w, kind, seq, problem = decode(v, size)
            if problem is None and h.home.get(key) != node[op.rank]:
                t = (node[op.rank], key, w, kind, seq)
                tier_hits.setdefault(t, set()).add(op.epoch)

    def tier_allows(op, key, p):
        """Could the reader's node tier hold p's value?  Only if a rank of
        its node hit it in an earlier epoch (the fence after that epoch
        published it) and, in user caching, no invalidation came since."""
        if tier == "off" or h.home.get(key) == node[op.rank]:
            return False
        hits = tier_hits.get((node[op.rank], key, p.writer, p.kind, p.seq))
        earlier = [e for e in hits or () if e < op.epoch]
        if not earlier:
            return False
        if tier == "user":
            return not any(invals.get(x) for x in range(max(earlier),
                                                         op.epoch))
        return True

    cache = {}
    for op, key, v, from_get in reads:
        what = "hit" if from_get else "value shown to a put-if-absent loser"
        if v is None:
            h.count("misses")
            continue
        h.count("hits" if from_get else "pia values shown")
        k, w, kind, seq, problem = decode(v, size)
        if problem:
            h.error("%s: key %d: %s: %s" % (op.where(), key, what, problem))
            continue
        if k != key:
            h.error("%s: key %d: %s is another key's value (key %d, writer "
                    "%d, seq %d)" % (op.where(), key, what, k, w, seq))
            continue
        p = puts.get((key, w, kind, seq))
        if p is None:
            if kind == 1 and (key, w, seq) in losers:
                h.error("%s: key %d: %s is the value of a put-if-absent "
                        "that lost (writer %d, seq %d)" % (op.where(), key,
                                                           what, w, seq))
            else:
                h.error("%s: key %d: %s (writer %d, seq %d) was never put"
                        % (op.where(), key, what, w, seq))
            continue
        if p.op.t0 >= op.t1:
            h.error("%s: key %d: %s (writer %d, seq %d) of a put that "
                    "started %d ns after the read returned (%s)"
                    % (op.where(), key, what, w, seq, p.op.t0 - op.t1,
                       p.op.where()))
            continue
        if op.epoch == 0:
            continue
        nk = (key, op.epoch)
        if nk not in cache:
            cache[nk] = newest_before(key, op.epoch)
        last, seqs = cache[nk]
        h.count("hits checked after a fence")
        stale = None
        if seq < seqs.get(w, 0):
            stale = ("writer %d had put seq %d before the fence"
                     % (w, seqs[w]))
        elif p.op.epoch < last:
            stale = ("it was put in epoch %d, and the key was put again "
                     "in epoch %d, before the fence" % (p.op.epoch, last))
        if stale and tier_allows(op, key, p):
            h.count("older values served by the node tier")
            stale = None
        if stale:
            h.error("%s: key %d: stale %s after a fence: writer %d seq %d, "
                    "but %s" % (op.where(), key, what, w, seq, stale))

    # put-if-absent: one winner, every loser shown a winner's value.  The
    # one documented exception (mpikvs(3), mpikvs_put_if_absent):
    # lock-free over the mpi transport, a put-if-absent of another node's
    # key is a lookup then a put, so a caller of another node than the
    # key's home may win as well; and its put, written as picked, may
    # overwrite the slot a winner of the home node is writing and lose the
    # key (mpikvs(7)), after which the next caller, of any node, wins too.
    # So there, with a caller of another node, several may win.
    lookup_then_put = (any_head.get("mode") == "lockfree"
                       and any_head.get("transport") == "mpi")
    for key, ops in sorted(pia.items()):
        h.count("pia keys")
        winners = [o for o in ops if o.rc == MPIKVS_OK]
        remote = [o for o in ops if node[o.rank] != h.home.get(key)]
        if lookup_then_put and len(winners) > 1 and remote:
            h.count("pia keys with several winners (lockfree over mpi)")
        elif len(winners) != 1:
            h.error("put-if-absent key %d: %d winners (%s)" % (
                key, len(winners),
                "; ".join(o.where() for o in winners) or "none"))
            continue
        won = {(o.rank, int(o.args[1])) for o in winners}
        for o in ops:
            if o.rc != MPIKVS_PRESENT:
                continue
            k, w, kind, seq, problem = decode(o.args[2], size)
            if problem is None and (k != key or kind != 1
                                    or (w, seq) not in won):
                h.error("%s: put-if-absent key %d: the loser was shown "
                        "writer %d seq %d, not a winner's value (%s)"
                        % (o.where(), key, w, seq, ", ".join(
                            "rank %d seq %d" % x for x in sorted(won))))

    # counters: the adds' chain and their sum, the CAS winners
    finals = {}
    for ctr, ops in adds.items():
        for o in ops:
            if o.epoch == last_epoch and int(o.args[1]) == 0:
                finals.setdefault(ctr, set()).add(int(o.args[2]))
    add_ops = [o for o in adds.get(0, ()) if int(o.args[1]) != 0
               and o.rc == MPIKVS_OK]
    h.count("counter adds checked", len(add_ops))
    total = sum(int(o.args[1]) for o in add_ops)
    chain = sorted(add_ops, key=lambda o: int(o.args[2]))
    expect = 0
    for o in chain:
        if int(o.args[2]) != expect:
            h.error("%s: counter 0: the add saw %s, but the adds before it "
                    "sum to %d (lost or repeated add)"
                    % (o.where(), o.args[2], expect))
            break
        expect += int(o.args[1])
    if add_ops and finals.get(0) != {total}:
        h.error("counter 0: final value %s, the adds sum to %d"
                % (sorted(finals.get(0, ())), total))
    winners = [o for o in cas if o.rc == MPIKVS_OK and o.args[1] == o.args[3]]
    h.count("CAS winners", len(winners))
    replaced = {}
    for o in winners:
        e = int(o.args[1])
        if e in replaced:
            h.error("%s: counter 1: two CAS winners replaced the value %d "
                    "(also %s)" % (o.where(), e, replaced[e].where()))
        replaced[e] = o
    if cas and finals.get(1) != {len(winners)}:
        h.error("counter 1: final value %s, but %d CAS increments won"
                % (sorted(finals.get(1, ())), len(winners)))


def report(h, label):
    counts = " ".join("%s=%d" % kv for kv in sorted(h.counts.items()))
    if h.errors:
        print("check-history: %s: %d violations" % (label, len(h.errors)))
        for e in h.errors[:30]:
            print("  " + e)
        if len(h.errors) > 30:
            print("  ... and %d more" % (len(h.errors) - 30))
    print("check-history: %s: checked %s" % (label, counts))
    return 1 if h.errors else 0


def run(directory):
    h = load(directory)
    check(h)
    return h


# --selftest: a small valid history, then one bad thing at a time.

def write_histories(d, ranks, tier="off", nodes=2 * (0,), homes=(0, 0)):
    """ranks: rank -> lines; nodes: each rank's node; homes: the home
    nodes of keys 1 and 2 (key 9's is node 0)."""
    for r, lines in ranks.items():
        with open(os.path.join(d, "rank-%d.hist" % r), "w") as f:
            f.write("history 1\nhost selftest\nclock monotonic\nrank %d\n"
                    "size %d\nnode %d\nnodes %d\nmode lockfree\n"
                    "transport mpi\ntier %s\nvalue_size 64\n"
                    % (r, len(ranks), nodes[r], len(set(nodes)), tier))
            if r == 0:
                f.write("home 1 %d\nhome 2 %d\nhome 9 0\n" % homes)
            f.write("\n".join(lines) + "\nend\n")


def hx(key, writer, seq, kind=0):
    return value_of(key, writer, kind, seq, 64).hex()


def good():
    """Two ranks, two epochs: rank 0 writes key 1, rank 1 key 2; both race
    for key 9; both add and CAS."""
    return {
        0: ["pia 0 10 20 0 9 1 -",
            "put 0 30 40 0 1 2",
            "add 0 41 42 0 0 3 0",
            "add 0 43 44 0 1 0 0",
            "cas 0 45 46 0 1 0 1 0",
            "fence 0 50 60 0",
            "put 1 70 80 0 1 3",
            "get 1 85 90 0 2 " + hx(2, 1, 2),
            "fence 1 100 110 0",
            "get 2 120 130 0 1 " + hx(1, 0, 3),
            "get 2 131 132 0 2 " + hx(2, 1, 3),
            "get 2 133 134 0 9 " + hx(9, 0, 1, 1),
            "add 2 135 136 0 0 0 7",
            "add 2 137 138 0 1 0 2"],
        1: ["pia 0 12 22 2 9 1 " + hx(9, 0, 1, 1),
            "put 0 30 40 0 2 2",
            "add 0 45 46 0 0 4 3",
            "add 0 47 48 0 1 0 1",
            "cas 0 49 50 0 1 1 2 1",
            "fence 0 50 60 0",
            "pb 1 70 80 0 2:3",
            "get 1 82 83 0 1 " + hx(1, 0, 2),
            "fence 1 100 110 0",
            "get 2 120 130 0 1 " + hx(1, 0, 3),
            "add 2 135 136 0 0 0 7",
            "add 2 137 138 0 1 0 2"],
    }


def tiered(inval):
    """Two nodes with a node tier: rank 1 writes key 2 (home node 1),
    rank 0 hits its first value in epoch 0 and reads it again in epoch 2,
    after the key was put again: the tier's value, unless invalidated."""
    return {
        0: ["get 0 20 30 0 2 " + hx(2, 1, 1),
            "fence 0 50 60 0"]
           + (["inval 1 61 62 0"] if inval else [])
           + ["fence 1 100 110 0",
              "get 2 120 130 0 2 " + hx(2, 1, 1)],
        1: ["put 0 10 15 0 2 1",
            "fence 0 50 60 0",
            "put 1 70 80 0 2 2"]
           + (["inval 1 81 82 0"] if inval else [])
           + ["fence 1 100 110 0",
              "get 2 120 130 0 2 " + hx(2, 1, 2)],
    }


def mutate(ranks, rank, prefix, new):
    """Replace the line of rank starting with prefix by new."""
    out = {r: list(lines) for r, lines in ranks.items()}
    for i, line in enumerate(out[rank]):
        if line.startswith(prefix):
            out[rank][i] = new
            return out
    raise AssertionError("selftest: no line %r" % prefix)


def selftest():
    torn = bytearray(bytes.fromhex(hx(1, 0, 3)))
    torn[40:48] = bytes.fromhex(hx(1, 0, 2))[40:48]
    cases = [
        ("a valid history", good(), None),
        ("stale read after a fence",
         mutate(good(), 1, "get 2 120", "get 2 120 130 0 1 " + hx(1, 0, 2)),
         "stale hit after a fence"),
        ("torn value",
         mutate(good(), 1, "get 2 120", "get 2 120 130 0 1 " + torn.hex()),
         "torn value"),
        ("another key's value",
         mutate(good(), 0, "get 2 131", "get 2 131 132 0 2 " + hx(1, 0, 3)),
         "another key's value"),
        ("a value read before its put started",
         mutate(good(), 1, "get 1 82", "get 1 61 65 0 1 " + hx(1, 0, 3)),
         "started"),
        ("two put-if-absent winners",
         mutate(good(), 1, "pia 0", "pia 0 12 22 0 9 1 -"),
         "2 winners"),
        ("two put-if-absent winners, one of another node (lock-free "
         "over mpi)",
         mutate(good(), 1, "pia 0", "pia 0 12 22 0 9 1 -"), None),
        ("a put-if-absent loser shown another value",
         mutate(good(), 1, "pia 0", "pia 0 12 22 2 9 1 " + hx(9, 1, 5, 1)),
         "the loser was shown"),
        ("counter sum mismatch",
         mutate(good(), 1, "add 2 135", "add 2 135 136 0 0 0 8"),
         "the adds sum to 7"),
        ("a lost counter add",
         mutate(good(), 1, "add 0 45", "add 0 45 46 0 0 4 0"),
         "lost or repeated add"),
        ("CAS winner not matching",
         mutate(mutate(good(), 1, "cas 0", "cas 0 49 50 0 1 0 1 0"),
                1, "add 0 47", "add 0 47 48 0 1 0 0"),
         "two CAS winners replaced the value 0"),
        ("a cut history", {0: good()[0], 1: good()[1][:-1]}, None),
        ("an older value from the node tier (caching always)",
         tiered(False), None),
        ("an older value after mpikvs_tier_invalidate (caching user)",
         tiered(True), "stale hit after a fence"),
    ]
    bad = 0
    for name, ranks, expect in cases:
        with tempfile.TemporaryDirectory(prefix="check-history.") as d:
            if "tier" in name:
                write_histories(d, ranks, "user" if "user" in name
                                else "always", (0, 1), (0, 1))
            elif "of another node" in name:
                write_histories(d, ranks, nodes=(0, 1))
            else:
                write_histories(d, ranks)
            if name == "a cut history":
                path = os.path.join(d, "rank-1.hist")
                with open(path) as f:
                    text = f.read()
                with open(path, "w") as f:
                    f.write(text.replace("\nend\n", "\n"))
                expect = "no end line"
            h = run(d)
        errors = "\n".join(h.errors)
        if expect is None:
            ok = not h.errors
        else:
            ok = expect in errors
        print("%s selftest: %s%s" % ("PASS" if ok else "FAIL", name,
                                     (": " + h.errors[0]) if h.errors and ok
                                     else ""))
        if not ok:
            bad += 1
            print("  expected %s, got: %s" % (
                repr(expect) if expect else "no violation",
                errors or "no violation"))
    return 1 if bad else 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--selftest":
        return selftest()
    if len(argv) != 2 or argv[1].startswith("-"):
        print("usage: check-history.py DIR | --selftest", file=sys.stderr)
        return 2
    return report(run(argv[1]), argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
