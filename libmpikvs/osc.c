/*
 * osc.c - can this MPI do what the fine-lock mode asks of it?
 *
 * The fine-lock mode takes bucket locks with MPI_Compare_and_swap and
 * MPI_Fetch_and_op, also on the caller's own rank.  Open MPI's rdma
 * one-sided component emulates those atomics through the shared-memory
 * transport and crashes on the own rank; Debian's openmpi-mca-params.conf
 * excludes the ucx and pt2pt components, so rdma is what a user gets
 * unless OMPI_MCA_osc says otherwise.  We read the component selection
 * through the MPI tool interface and refuse the mode with a remedy
 * instead of crashing.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"

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

int kvs_check_osc(mpikvs_t *kvs)
{
    char sel[256];

    if (kvs->mode != KVSHM_MODE_FINE_LOCK || !osc_selection(sel, sizeof(sel)))
        return MPIKVS_OK;
    if (strcmp(sel, "ucx") == 0 && !ucx_self_excluded())
        return kvs_fail(kvs, MPIKVS_ERR_MPI,
                        "the fine-lock mode over OMPI_MCA_osc=ucx needs "
                        "UCX_TLS=^self (UCX's self transport breaks atomics "
                        "on the own rank), or use OMPI_MCA_osc=pt2pt");
    if (allows_atomics(sel))
        return MPIKVS_OK;
    return kvs_fail(kvs, MPIKVS_ERR_MPI,
                    "the fine-lock mode needs MPI atomics on every rank, "
                    "which Open MPI's one-sided component selection '%s' "
                    "cannot give (its rdma component crashes on the own "
                    "rank): set OMPI_MCA_osc=pt2pt or ucx",
                    sel);
}
