/*
 * mpi_impl.c - what differs between MPI implementations, in one place.
 *
 * The library is written to MPI-3.1 and runs under Open MPI and under
 * the MPICH family (MPICH, Intel MPI, MVAPICH, Cray MPICH).  What is one
 * implementation's own lives here:
 *
 *   - which implementation this process runs (MPI_Get_library_version),
 *     and whether it is the one the library was compiled for: a program
 *     that links another MPI than libmpikvs's, or one started by another
 *     MPI's launcher, is refused at open with the mismatch named;
 *   - a failed MPI call's message, with the remedy of a failed window
 *     call under Open MPI (OMPI_MCA_osc);
 *   - whether MPI's atomics can be used (the fine-lock mode's lock
 *     words, the global counters over the mpi transport): Open MPI's rdma
 *     one-sided component emulates MPI_Compare_and_swap and
 *     MPI_Fetch_and_op through the shared-memory transport and crashes
 *     on them (on the own rank, and on another node of the same host);
 *     Debian's openmpi-mca-params.conf excludes the ucx and pt2pt
 *     components, so rdma is what a user gets unless OMPI_MCA_osc says
 *     otherwise.  We read the component selection through the MPI tool
 *     interface and refuse the mode, or the counter call, with a remedy
 *     instead of crashing.
 *     MPICH's one-sided atomics work on every rank (ch4: the netmod's or
 *     active messages the target applies), so there is nothing to refuse.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "handle.h"
#include "mpi_impl.h"

/* The family of an MPI library, by the name its version string gives. */
static enum kvs_mpi_family family_of(const char *version)
{
    if (strstr(version, "Open MPI"))
        return KVS_MPI_OPENMPI;
    /* MPICH, Cray's "CRAY MPICH", MVAPICH, Intel's (an MPICH ABI) */
    if (strstr(version, "MPICH") || strstr(version, "MVAPICH") ||
        strstr(version, "Intel(R) MPI"))
        return KVS_MPI_MPICH;
    return KVS_MPI_OTHER;
}

static const char *family_name(enum kvs_mpi_family f)
{
    switch (f) {
    case KVS_MPI_OPENMPI:
        return "Open MPI";
    case KVS_MPI_MPICH:
        return "the MPICH family";
    default:
        return "another MPI";
    }
}

/* What mpi.h the library was compiled with. */
#if defined(OPEN_MPI)
#define BUILT_FAMILY KVS_MPI_OPENMPI
#elif defined(MPICH_VERSION)
#define BUILT_FAMILY KVS_MPI_MPICH
#else
#define BUILT_FAMILY KVS_MPI_OTHER
#endif

/* The library's version string up to its first line's end or comma
 * ("Open MPI v4.1.4", "MPICH Version: 4.0.2"), runs of blanks made one
 * (MPICH's has tabs).  MPI_Get_library_version is allowed before
 * MPI_Init and from any thread (MPI-3.1, 8.1.1), and takes no handle, so
 * it is safe to call into an MPI of another ABI. */
static char library[MPI_MAX_LIBRARY_VERSION_STRING];
static pthread_once_t library_once = PTHREAD_ONCE_INIT;

static void read_library(void)
{
    /* Room for any MPI's string, not only the one of the mpi.h we were
     * built with: in a process that runs another MPI (the case to name),
     * MPICH writes up to its 8192 bytes where Open MPI's bound is 256.
     * Called once (library_once). */
    static char v[65536];
    int len = 0;
    size_t n = 0;
    bool blank = false;

    if (MPI_Get_library_version(v, &len) != MPI_SUCCESS)
        snprintf(v, sizeof(v), "unknown");
    for (const char *c = v;
         *c && *c != '\n' && *c != ',' && n + 1 < sizeof(library); c++) {
        if (*c == ' ' || *c == '\t') {
            blank = n > 0;
            continue;
        }
        if (blank)
            library[n++] = ' ';
        if (n + 1 < sizeof(library))
            library[n++] = *c;
        blank = false;
    }
    library[n] = '\0';
}

const char *kvs_mpi_library(void)
{
    pthread_once(&library_once, read_library);
    return library;
}

enum kvs_mpi_family kvs_mpi_family(void)
{
    return family_of(kvs_mpi_library());
}

/* How many processes the launcher says it started, from what each
 * launcher puts in its processes' environment: Open MPI's mpirun, hydra
 * (MPICH's, Intel MPI's) and Slurm's pmi2 plugin (PMI_SIZE), srun
 * (SLURM_STEP_NUM_TASKS).  0 when none says. */
static long launched_size(const char **by)
{
    static const char *const vars[] = {
        "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"};

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long n;
        if (!v || !*v)
            continue;
        n = strtol(v, &end, 10);
        if (*end == '\0' && n > 0) {
            *by = vars[i];
            return n;
        }
    }
    return 0;
}

int kvs_check_mpi_impl(void)
{
    enum kvs_mpi_family running = kvs_mpi_family();
    const char *by = NULL;
    long launched;
    int world = 0;

    if (BUILT_FAMILY != KVS_MPI_OTHER && running != KVS_MPI_OTHER &&
        running != BUILT_FAMILY)
        return kvs_fail(NULL, MPIKVS_ERR_MPI,
                        "mpikvs_open: libmpikvs was built for %s, but this "
                        "process runs %s: the program and libmpikvs must "
                        "use one MPI (build the program with the mpicc "
                        "libmpikvs was built with, or link the libmpikvs "
                        "built for the program's MPI)",
                        family_name(BUILT_FAMILY), kvs_mpi_library());
    /* A process started by another MPI's launcher finds no launcher of
     * its own and runs alone (a singleton): a world of 1 where the
     * launcher started more. */
    launched = launched_size(&by);
    if (MPI_Comm_size(MPI_COMM_WORLD, &world) == MPI_SUCCESS && world == 1 &&
        launched > 1)
        return kvs_fail(NULL, MPIKVS_ERR_MPI,
                        "mpikvs_open: this process is one of %ld its "
                        "launcher started (%s), but its MPI (%s) sees a "
                        "world of 1: was it started by another MPI's "
                        "launcher?  Start it with the mpiexec of the MPI "
                        "it was built with%s",
                        launched, by, kvs_mpi_library(),
                        running == KVS_MPI_OPENMPI
                            ? " (under Slurm: srun --mpi=pmix)"
                        : running == KVS_MPI_MPICH
                            ? " (under Slurm: srun --mpi=pmi2)"
                            : "");
    return MPIKVS_OK;
}

int kvs_mpi_fail(mpikvs_t *kvs, const char *what, int mpi_rc)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;

    MPI_Error_string(mpi_rc, text, &len);
    return kvs_fail(kvs, MPIKVS_ERR_MPI, "%s failed: %s%s", what, text,
                    kvs_mpi_family() == KVS_MPI_OPENMPI
                        ? " (for the mpi transport's window across nodes "
                          "and its lock modes, Open MPI needs "
                          "OMPI_MCA_osc=ucx or pt2pt)"
                        : "");
}

/* Open MPI's "osc" selection ("" when nobody chose, "^ucx,pt2pt" when
 * Debian did); false if it cannot be read, e.g. another MPI. */
static bool read_osc_selection(char *buf, int len)
{
    int provided, found;
    bool ok = false;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return false;
    /* By name: a scan of every variable's info took 0.2 s (Open MPI 4.1
     * has over a thousand). */
    if (MPI_T_cvar_get_index("osc", &found) == MPI_SUCCESS) {
        char name[256], desc[8];
        int name_len = sizeof(name), desc_len = sizeof(desc), verbosity,
            binding, scope, count;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        MPI_T_cvar_handle handle;
        if (MPI_T_cvar_get_info(found, name, &name_len, &verbosity, &type,
                                &enumtype, desc, &desc_len, &binding,
                                &scope) == MPI_SUCCESS &&
            type == MPI_CHAR &&
            MPI_T_cvar_handle_alloc(found, NULL, &handle, &count) ==
                MPI_SUCCESS) {
            char *value = calloc(1, (size_t)(count > len ? count : len) + 1);
            if (value && MPI_T_cvar_read(handle, value) == MPI_SUCCESS) {
                snprintf(buf, (size_t)len, "%s", value);
                ok = true;
            }
            free(value);
            MPI_T_cvar_handle_free(&handle);
        }
    }
    MPI_T_finalize();
    return ok;
}

/* Read once per process: the selection is fixed once MPI is initialized,
 * and MPI_T_init_thread costs 0.2 s in Open MPI 4.1 (it registers every
 * variable again), which every fine-lock open paid. */
static char osc_sel[256];
static bool osc_sel_ok;
static pthread_once_t osc_sel_once = PTHREAD_ONCE_INIT;

static void read_osc_selection_once(void)
{
    osc_sel_ok = read_osc_selection(osc_sel, sizeof(osc_sel));
}

static bool osc_selection(char *buf, int len)
{
    pthread_once(&osc_sel_once, read_osc_selection_once);
    if (osc_sel_ok)
        snprintf(buf, (size_t)len, "%s", osc_sel);
    return osc_sel_ok;
}

/* Whether a component list (MCA syntax) can select ucx or pt2pt. */
static bool allows_atomics(const char *sel)
{
    bool excluding = sel[0] == '^';
    bool named = strstr(sel, "ucx") || strstr(sel, "pt2pt");

    if (!sel[0])
        return true;   /* nobody chose: the component's own priorities */
    return excluding ? !(strstr(sel, "ucx") && strstr(sel, "pt2pt")) : named;
}

/* UCX's "self" transport does the own rank's atomics apart from the
 * other ranks' (measured: lock words went wrong and buckets stayed
 * locked), so osc ucx needs it excluded. */
static bool ucx_self_excluded(void)
{
    const char *tls = getenv("UCX_TLS");

    if (!tls || !*tls)
        return false;
    return tls[0] == '^' ? strstr(tls, "self") != NULL
                         : strstr(tls, "self") == NULL;
}

int kvs_check_osc(mpikvs_t *kvs, const char *need)
{
    char sel[256];

    if (kvs_mpi_family() != KVS_MPI_OPENMPI ||
        !osc_selection(sel, sizeof(sel)))
        return MPIKVS_OK;
    if (strcmp(sel, "ucx") == 0 && !ucx_self_excluded())
        return kvs_fail(kvs, MPIKVS_ERR_MPI,
                        "%s over OMPI_MCA_osc=ucx needs UCX_TLS=^self "
                        "(UCX's self transport breaks atomics on the own "
                        "rank), or use OMPI_MCA_osc=pt2pt", need);
    if (allows_atomics(sel))
        return MPIKVS_OK;
    return kvs_fail(kvs, MPIKVS_ERR_MPI,
                    "%s needs MPI atomics on every rank, which Open MPI's "
                    "one-sided component selection '%s' cannot give (its "
                    "rdma component crashes on them): set "
                    "OMPI_MCA_osc=pt2pt or ucx", need, sel);
}
