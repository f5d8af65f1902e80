/*
 * format.c - the computed format id and the header checksum.
 */
#include <xxhash.h>

#include "format.h"

/*
 * A number someone has to remember to bump does not get bumped: the
 * format id is derived from the size and offset of every field a reader
 * interprets, so a layout change refuses old regions by itself.
 */
uint64_t kvshm_format_id(void)
{
#define F(type, field) offsetof(struct type, field)
#define COUNTER_NAME(name, label, text) #name ","
    static const char counter_names[] = MPIKVS_STATISTICS(COUNTER_NAME);
    static const char rma_counter_names[] = KVSHM_RMA_COUNTERS(COUNTER_NAME);
#undef COUNTER_NAME
    const uint64_t shape[] = {
        sizeof(struct kvshm_header),
        F(kvshm_header, kind), F(kvshm_header, format_id),
        F(kvshm_header, size), F(kvshm_header, max_size),
        F(kvshm_header, header_size), F(kvshm_header, flags),
        F(kvshm_header, created), F(kvshm_header, uid),
        F(kvshm_header, gid), F(kvshm_header, step),
        F(kvshm_header, job), F(kvshm_header, node),
        F(kvshm_header, tag), F(kvshm_header, checksum),
        sizeof(struct kvshm_tier_control),
        F(kvshm_tier_control, seq), F(kvshm_tier_control, nbuckets),
        F(kvshm_tier_control, entries_top), F(kvshm_tier_control, entries),
        F(kvshm_tier_control, hash_seed),
        F(kvshm_tier_control, live_bytes), F(kvshm_tier_control, dead_bytes),
        F(kvshm_tier_control, updates), F(kvshm_tier_control, rebuilds),
        F(kvshm_tier_control, rebuild_failures),
        F(kvshm_tier_control, growths),
        F(kvshm_tier_control, max_load_milli),
        sizeof(struct kvshm_tier_bucket),
        sizeof(struct kvshm_tier_entry),
        F(kvshm_tier_entry, next), F(kvshm_tier_entry, key_len),
        F(kvshm_tier_entry, value_len), F(kvshm_tier_entry, flags),
        F(kvshm_tier_entry, checksum), KVSHM_TIER_CHECKSUM_SEED,
        F(kvshm_tier_control, dropped), F(kvshm_tier_control, repairs),
        KVSHM_TIER_UNIT,
        sizeof(struct kvshm_data_control),
        F(kvshm_data_control, slot_size), F(kvshm_data_control, nbuckets),
        F(kvshm_data_control, buckets_offset),
        F(kvshm_data_control, stats_offset),
        F(kvshm_data_control, max_ranks), F(kvshm_data_control, mode),
        F(kvshm_data_control, state), F(kvshm_data_control, table),
        F(kvshm_data_control, lock_lease),
        F(kvshm_data_control, lock_epoch),
        F(kvshm_data_control, key_size), F(kvshm_data_control, value_size),
        F(kvshm_data_control, slots_per_bucket),
        F(kvshm_data_control, bucket_size), F(kvshm_data_control, nnodes),
        F(kvshm_data_control, node_index),
        F(kvshm_data_control, counters), KVSHM_COUNTERS_MAX,
        F(kvshm_tier_control, writer_pid), F(kvshm_tier_control, clears),
        F(kvshm_tier_bucket, head), F(kvshm_tier_bucket, tail),
        F(kvshm_tier_entry, hash),
        KVSHM_LOCK_EPOCH_SHIFT, KVSHM_LOCK_WRITER, KVSHM_LOCK_WAITER,
        sizeof(struct kvshm_rank_stats),
        F(kvshm_rank_stats, evictions), F(kvshm_rank_stats, transport),
        F(kvshm_rank_stats, comm_rank),
        /* the counters' names in their order: a renamed or moved counter
         * is another format, though every offset stays */
        MPIKVS_NSTATISTICS, XXH3_64bits(counter_names, sizeof(counter_names)),
        KVSHM_SLOT_OCCUPIED, KVSHM_SLOT_INVALID, KVSHM_SLOT_BUSY,
        KVSHM_SLOT_TAG_SHIFT, KVSHM_SLOT_TAG_BITS,
        sizeof(struct kvshm_bucket), kvshm_bucket_meta_offset(1),
        kvshm_bucket_header_size(4), KVSHM_SLOT_KV_OFFSET,
        KVSHM_SLOT_CHECKSUM_SIZE, KVSHM_SLOT_CHECKSUM_SEED,
        KVSHM_SLOT_STAMP_SHIFT,
        sizeof(struct kvshm_layout_control),
        F(kvshm_layout_control, dht_size), F(kvshm_layout_control, scope),
        F(kvshm_layout_control, ntables),
        F(kvshm_layout_control, tables_offset),
        F(kvshm_layout_control, config_len),
        F(kvshm_layout_control, body_checksum),
        F(kvshm_layout_control, body_size),
        F(kvshm_layout_control, request_hash),
        F(kvshm_layout_control, step), F(kvshm_layout_control, nnodes),
        F(kvshm_layout_control, node_index),
        F(kvshm_layout_control, tasks_on_node),
        F(kvshm_layout_control, nodelist_offset),
        F(kvshm_layout_control, nodelist_len),
        F(kvshm_layout_control, config_offset),
        sizeof(struct kvshm_job_table),
        F(kvshm_job_table, name), F(kvshm_job_table, data_tag),
        F(kvshm_job_table, tier_prefix), F(kvshm_job_table, data_bytes),
        F(kvshm_job_table, tier_bytes), F(kvshm_job_table, shape),
        sizeof(struct kvshm_table_shape),
        F(kvshm_table_shape, key_size), F(kvshm_table_shape, value_size),
        F(kvshm_table_shape, slots_per_bucket),
        F(kvshm_table_shape, slot_size), F(kvshm_table_shape, bucket_size),
        F(kvshm_table_shape, nbuckets), F(kvshm_table_shape, max_ranks),
        F(kvshm_table_shape, mode),
        sizeof(struct kvshm_rma_control),
        F(kvshm_rma_control, nranks), F(kvshm_rma_control, win_ranks),
        F(kvshm_rma_control, ring_size), F(kvshm_rma_control, segment_size),
        F(kvshm_rma_control, ranks_offset),
        F(kvshm_rma_control, segments_offset),
        F(kvshm_rma_control, name_seq), F(kvshm_rma_control, name),
        sizeof(struct kvshm_rma_rank), F(kvshm_rma_rank, pid),
        F(kvshm_rma_rank, win_rank), F(kvshm_rma_rank, mode),
        KVSHM_RMA_NCOUNTERS,
        XXH3_64bits(rma_counter_names, sizeof(rma_counter_names)),
        sizeof(struct kvshm_rma_segment), F(kvshm_rma_segment, tail),
        F(kvshm_rma_segment, head), F(kvshm_rma_segment, ring_size),
        F(kvshm_rma_segment, ready), sizeof(struct kvshm_rma_slot),
        F(kvshm_rma_slot, seq), F(kvshm_rma_slot, target),
        F(kvshm_rma_slot, len), F(kvshm_rma_slot, gen),
        F(kvshm_rma_slot, disp), F(kvshm_rma_slot, pos), KVSHM_RMA_SLOTS,
        KVSHM_RMA_OFF, KVSHM_RMA_TRANSPARENT, KVSHM_RMA_READONLY,
    };
#undef F
    return XXH3_64bits(shape, sizeof(shape));
}

uint64_t kvshm_header_checksum(const struct kvshm_header *h)
{
    return XXH3_64bits(h, offsetof(struct kvshm_header, checksum));
}
