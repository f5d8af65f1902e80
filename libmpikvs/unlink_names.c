/*
 * unlink_names.c - the names of the regions a run outside the SPANK
 * plugin makes go as soon as nobody needs them.
 *
 * Without the plugin the node's leader makes the node's data region and
 * tier (open.c, tier.c).  Their names are needed only while the open
 * runs: the node's ranks open them by name, and under the ucx transport
 * the ranks of the other nodes of the host map the data region by name
 * too (transport_ucx.c, map_region).  kvs_unlink_names runs after the
 * agreement that every rank finished the transport's open: every rank
 * that needs the regions holds them, and the names go.  From then on the
 * memory lives exactly as long as a process maps it, and a run that ends
 * without mpikvs_close, in MPI_Abort or by a kill leaves nothing in the
 * shm directory (mpikvs(7), LIFETIME OF REGIONS).  mpikvs-stat still
 * finds the regions through the processes that hold them (shm/held.h).
 *
 * Under the plugin nothing changes: the plugin made the names, they live
 * as long as its job or step, and it removes them.
 */
#include "handle.h"
#include "unlink_names.h"
#include "tier.h"

void kvs_unlink_names(mpikvs_t *kvs)
{
    const char *dir = kvs->shm_dir[0] ? kvs->shm_dir : NULL;

    if (kvs->created)
        kvshm_region_unlink(dir, kvs->region_name);
    if (kvs->tier_created)
        kvshm_tier_unlink(dir, kvs->tier_job, kvs->tier_node,
                          kvs->tier_prefix);
    /* nothing left for the close to remove */
    kvs->created = kvs->tier_created = false;
}
