# python-env.sh - sourced (POSIX sh) by the tests of tests/python/ after
# tests/plain-mpirun.sh: the Python configure chose and the module of the
# build tree.
#
#   python_env   sets python (configure's PYTHON, read from the build's
#       Makefile: a PATH's python3 may be another one, without mpi4py)
#       and exports PYTHONPATH to python/.libs, where libtool puts
#       mpikvs.so (it finds libmpikvs of the build tree by its rpath);
#       under a sanitizer build, exports ASAN_OPTIONS (detect_leaks=0)
#       and sets preload to the libasan the module needs first in the
#       process (the interpreter is not instrumented), else "".
#       Exits 1 saying why when the module is not built.

python_env() {
    python=$(sed -n 's/^PYTHON = //p' "${top_builddir:-.}/Makefile")
    pe_mod=${top_builddir:-.}/python/.libs/mpikvs.so
    if [ -z "$python" ] || [ ! -f "$pe_mod" ]; then
        echo "FAIL: $pe_mod or configure's PYTHON is missing (make builds them)"
        exit 1
    fi
    PYTHONPATH=$(cd "$(dirname "$pe_mod")" && pwd)
    export PYTHONPATH
    preload=
    if plain_mpirun_asan "$pe_mod"; then
        preload=$(ldd "$pe_mod" | awk '/libasan/ {print $3}')
    fi
}
