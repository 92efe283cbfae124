/* px_partition_memo.h — the partitioner's answers for problems asked again
 * (px_partition_memo.c), kept in the caller's px_partition_memo
 * (px_partition.h).  Internal to the partitioner. */
#ifndef PX_PARTITION_MEMO_H
#define PX_PARTITION_MEMO_H

#include <stdbool.h>

#include "px_partition.h"

/* True, and *sol the earlier answer, when pb under o was solved before and
 * is still kept in memo. */
bool px_part_memo_get(px_partition_memo *memo, const px_partition_problem *pb,
                      const px_partition_opts *o, px_partition_solution *sol);

/* Keeps sol as the answer for pb under o (the oldest of a few is dropped). */
void px_part_memo_put(px_partition_memo *memo, const px_partition_problem *pb,
                      const px_partition_opts *o, const px_partition_solution *sol);

#endif
