#!/bin/sh
#
# run-persist-fault-tests.sh - mpikvs_save and mpikvs_load where the file
# system, another user or another rank lets them down
# (tests/mpi/test_persist_fault.c), under plain mpirun:
#
#   the save's mode: 0600 under umask 022
#   another user's files in a shared save directory (a group's project
#   directory, a sticky one): a link at <path>.partial to a file of the
#   saver's, and a 0666 file of theirs there; the save writes neither,
#   and path is the saver's own file, mode 0600 (as root with the user
#   mpikvstest, made if missing; skipped, saying so, as another user)
#   two saves of one path at once, each several times: every save
#   succeeds and the file loads whole
#   a rank stopped (SIGSTOP) in the middle of a save, MPIKVS_TIMEOUT=10:
#   the other's save returns MPIKVS_ERR_STALLED and leaves no partial
#   file; once resumed, gets, a fence and a save work, and the file loads
#   a rank killed (SIGKILL) in the middle of a save: the file at path
#   still loads whole; the same in the middle of a load: the file is
#   unchanged and loads whole
#   a full file system (a 700 KiB tmpfs mounted here; skipped, saying
#   so, where mount is not permitted): the save fails, the old save
#   stays and loads, no partial file is left
#   crafted files: a block size that wraps around, a FIFO, a directory;
#   and a FIFO as the config's persist.load, which must fail the open
#   rather than wait for a writer
#   a rank that does not come to mpikvs_close with persist.save: every
#   close returns within MPIKVS_CLOSE_TIMEOUT and nothing is saved
#   an open for writing, pwrite and fsync failing in every rank during a
#   save (a seccomp filter, tests/mpi/fail_syscalls.c): the save fails
#   naming itself, leaves no partial file, and the last save loads
#   (libfiu's fiu-run is not used here: its wrappers deadlock against
#   the loader in about one MPI_Init of three; see fail_syscalls.c)
#
# Each mpirun has a hard time limit (MPITEST_TIMEOUT, default 120 s); a
# load that waits on a FIFO, or a close that waits for the missing rank,
# fails by it.  The regions go to a directory of their own, checked
# empty at the end.

LC_ALL=C
export LC_ALL
. "${top_srcdir:-.}/tests/plain-mpirun.sh"
plain_mpirun_env
plain_mpirun_prog test_persist_fault
plain_mpirun_scratch persistfault
plain_mpirun_tally
OMPI_MCA_osc=pt2pt    # a window across virtual nodes (run-mpi-tests.sh)
export OMPI_MCA_osc
xs="-x OMPI_MCA_btl -x OMPI_MCA_osc -x MPITEST_WATCHDOG -x MPIKVS_SHM_DIR"
plain_mpirun_asan "$prog" && xs="$xs -x ASAN_OPTIONS"
n=2000
mounted=

cleanup() {
    [ -z "$mounted" ] || umount "$mounted"
    rm -rf "$tmp" "$MPIKVS_SHM_DIR"
}
trap cleanup EXIT

# job LABEL NP VNODES [ENV=VALUE ...] -- ARGS...: the program's output in
# $tmp/out; true when it passed
job() {
    label=$1 np=$2 vn=$3
    shift 3
    envs="MPIKVS_VIRTUAL_NODES=$vn"
    while [ "$1" != "--" ]; do
        envs="$envs $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    env $envs timeout -k 5 "$limit" "$mpirun" --oversubscribe $xs \
        $(for e in $envs; do echo "-x ${e%%=*}"; done) -np "$np" \
        "$prog" "$@" </dev/null >"$tmp/out.$label" 2>&1
}

# run LABEL NP VNODES [ENV=VALUE ...] -- ARGS...: PASS or FAIL LABEL
run() {
    if job "$@"; then
        echo "PASS $1"
        grep '^rank 0:' "$tmp/out.$1" | sed 's/^/    /'
        ok
    else
        bad "$1" "$tmp/out.$1"
    fi
}

file="$tmp/table.kvs"
# the save's mode is 0600 whatever the umask
umask 022
run save 2 2 -- save "$file" $n 1
mode=$(stat -c %a "$file")
[ "$mode" = 600 ] || bad "the save is mode $mode under umask 022, not 600"

# ---- another user's files at the save's partial name ----
user=mpikvstest
if [ "$(id -u)" != 0 ]; then
    echo "SKIP another user's files: needs root and the user $user"
else
    if ! getent passwd "$user" >/dev/null; then
        useradd -M -s /bin/sh -c 'mpikvs tests' "$user" ||
            { echo "FAIL: cannot create $user"; exit 1; }
    fi
    # a group's project directory (the other user may create files in
    # it) and a sticky one; the scratch directory must be reachable
    chmod 755 "$tmp"
    for kind in group sticky; do
        d="$tmp/$kind"
        mkdir "$d"
        if [ $kind = group ]; then
            chgrp "$user" "$d" && chmod 2770 "$d"
        else
            chmod 1777 "$d"
        fi
        printf 'precious\n' >"$d/victim"
        chmod 600 "$d/victim"
        runuser -u "$user" -- ln -s "$d/victim" "$d/link.kvs.partial"
        runuser -u "$user" -- sh -c "umask 0; : >'$d/planted.kvs.partial'"
        for t in link planted; do
            label="$kind directory, $t at the partial name"
            if ! job "$label" 2 2 -- save "$d/$t.kvs" $n 1; then
                bad "$label" "$tmp/out.$label"
                continue
            fi
            what=$(stat -c '%F %U %a' "$d/$t.kvs")
            if [ "$what" != "regular file root 600" ]; then
                bad "$label: $d/$t.kvs is a $what, not root's own file, 600"
            elif [ "$(cat "$d/victim")" != precious ]; then
                bad "$label: the link's target was written"
            elif [ $t = planted ] && [ -s "$d/planted.kvs.partial" ]; then
                bad "$label: the other user's file holds the table"
            else
                echo "PASS $label: $d/$t.kvs is a $what"
                ok
            fi
        done
        run "$kind directory, the saves load" 2 1 -- check "$d/link.kvs" $n
    done
fi

# ---- two saves of one path at once ----
job "save A" 2 1 -- save "$file" $n 4 &
a=$!
job "save B" 2 2 -- save "$file" $n 4
b=$?
if wait $a && [ $b = 0 ]; then
    echo "PASS two saves of one path at once, 4 each"
    ok
else
    bad "two saves of one path at once" "$tmp/out.save A"
    sed 's/^/    /' "$tmp/out.save B"
fi
run "after two saves at once, the file loads" 2 2 -- check "$file" $n
left=$(ls "$tmp" | grep '\.partial' || true)
[ -z "$left" ] || bad "partial files left in $tmp: $left"

# ---- a rank killed in the middle of a save ----
# the first job's save is at $file; a second saves it over and over, and
# its rank 1 gets SIGKILL while a partial file of it exists
mkdir "$tmp/pids"
job "save-loop" 2 2 -- save-loop "$file" $n "$tmp/pids" &
loop=$!
seen=
for i in $(seq 1 600); do    # up to a minute: the job starts slowly
    # one listing: a second one may come after the save's rename
    part=$(ls "$tmp" | grep 'table\.kvs\.partial\.' | head -1)
    if [ -s "$tmp/pids/rank.1" ] && [ -n "$part" ]; then
        seen=$part
        kill -KILL "$(cat "$tmp/pids/rank.1")"
        break
    fi
    sleep 0.1
done
wait $loop
if [ -z "$seen" ]; then
    bad "a rank killed in a save: no save of the loop was seen" \
        "$tmp/out.save-loop"
else
    echo "PASS rank 1 killed while $seen existed"
    ok
    run "after a rank was killed in a save, the file loads" 2 1 -- \
        check "$file" $n
fi
# a killed save leaves its partial file (mpikvs(3)), and the killed
# job's regions: neither is ours to judge here
rm -f "$tmp"/table.kvs.partial.*
rm -f "$MPIKVS_SHM_DIR"/*

# ---- a rank stopped in the middle of a save ----
# the job saves over and over with MPIKVS_TIMEOUT=10; its rank 1 gets
# SIGSTOP while a partial file exists, and SIGCONT once rank 0's save has
# given up (DIR/stalled); the job then checks its handle still works.
# The bound is long enough that no save stalls only because a busy
# machine (or a sanitizer) slowed a rank that was not stopped.
rm -f "$tmp"/pids/*
job "save-stop" 2 2 MPIKVS_TIMEOUT=10 -- save-stop "$file" $n "$tmp/pids" &
loop=$!
stopped=
for i in $(seq 1 600); do    # up to a minute: the job starts slowly
    part=$(ls "$tmp" | grep 'table\.kvs\.partial\.' | head -1)
    if [ -s "$tmp/pids/rank.1" ] && [ -n "$part" ]; then
        kill -STOP "$(cat "$tmp/pids/rank.1")" && stopped=yes
        break
    fi
    sleep 0.1
done
if [ -n "$stopped" ]; then
    for i in $(seq 1 1200); do   # rank 0 gives up after MPIKVS_TIMEOUT
        [ -e "$tmp/pids/stalled" ] && break
        sleep 0.1
    done
    kill -CONT "$(cat "$tmp/pids/rank.1")"
fi
if ! wait $loop; then
    bad "a rank stopped in a save" "$tmp/out.save-stop"
elif [ -z "$stopped" ]; then
    bad "a rank stopped in a save: no save of the loop was seen" \
        "$tmp/out.save-stop"
else
    echo "PASS a rank stopped in a save: the others' save gave up, and" \
        "the handle worked once it was resumed"
    grep '^rank [01]:' "$tmp/out.save-stop" | sed 's/^/    /'
    ok
    run "after a rank was stopped in a save, the file loads" 2 1 -- \
        check "$file" $n
fi
rm -f "$tmp"/table.kvs.partial.*

# ---- a rank killed in the middle of a load ----
# a job loads the file over and over, and its rank 1 gets SIGKILL once
# one load worked: the file is left as it was, and loads whole
rm -f "$tmp"/pids/*
before=$(cksum <"$file")
job "load-loop" 2 2 -- load-loop "$file" "$tmp/pids" &
loop=$!
killed=
for i in $(seq 1 600); do    # up to a minute: the job starts slowly
    if [ -s "$tmp/pids/rank.1" ]; then
        kill -KILL "$(cat "$tmp/pids/rank.1")" && killed=yes
        break
    fi
    sleep 0.1
done
wait $loop
if [ -z "$killed" ]; then
    bad "a rank killed in a load: the loop's loads were not seen" \
        "$tmp/out.load-loop"
elif [ "$(cksum <"$file")" != "$before" ]; then
    bad "a rank killed in a load: the file changed"
else
    echo "PASS rank 1 killed in a load, the file unchanged"
    ok
    run "after a rank was killed in a load, the file loads" 2 1 -- \
        check "$file" $n
fi
rm -f "$MPIKVS_SHM_DIR"/*

# ---- a full file system ----
full="$tmp/full"
mkdir "$full"
if mount -t tmpfs -o size=700k,mode=0700 tmpfs "$full" 2>"$tmp/mount.err"
then
    mounted=$full
    run "full file system" 2 1 -- full "$full/table.kvs" $n
else
    echo "SKIP full file system: cannot mount a tmpfs:" \
        "$(cat "$tmp/mount.err")"
fi

# ---- crafted files, a FIFO ----
mkdir "$tmp/crafted"
run "crafted files refused" 2 2 -- crafted "$file" "$tmp/crafted"
cat >"$tmp/fifo.json" <<JSON
{"version": 1, "tables": {"t": {"key": {"key_size": 32},
 "value": {"value_size": 64}, "size": "4M",
 "persist": {"load": "$tmp/crafted/fifo.kvs"}}}}
JSON
run "open with a FIFO to load" 2 2 MPIKVS_CONFIG="$tmp/fifo.json" -- \
    open-fifo

# ---- a rank that never comes to close ----
cat >"$tmp/save.json" <<JSON
{"version": 1, "tables": {"t": {"key": {"key_size": 32},
 "value": {"value_size": 64}, "size": "4M",
 "persist": {"save": "$tmp/noclose.kvs"}}}}
JSON
run "a rank that does not come to close" 3 2 \
    MPIKVS_CONFIG="$tmp/save.json" MPIKVS_CLOSE_TIMEOUT=2 -- noclose $n
if ls "$tmp" | grep -q noclose; then
    bad "a close that timed out saved: $(ls "$tmp" | grep noclose)"
fi

# ---- system calls failing in a save ----
# a seccomp filter in every rank (tests/mpi/fail_syscalls.c): an open for
# writing of the partial file, its pwrite, its fsync; each job first
# saves whole, then the failed save must leave that save loadable
for kind in open-write pwrite fsync; do
    sc=$tmp/syscall-$kind.kvs
    if job "$kind failing" 2 1 -- syscall "$sc" $n "$kind"; then
        echo "PASS a save with $kind failing fails"
        grep '^rank 0:' "$tmp/out.$kind failing" | sed 's/^/    /'
        ok
        run "after a save with $kind failing, the file loads" 2 1 -- \
            check "$sc" $n
    else
        bad "a save with $kind failing" "$tmp/out.$kind failing"
    fi
done

left=$(ls -A "$MPIKVS_SHM_DIR")
[ -z "$left" ] || bad "left in $MPIKVS_SHM_DIR: $left"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
