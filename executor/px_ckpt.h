/* px_ckpt.h — sharded training checkpoints: save every N steps, resume
 * bit-exactly (docs/executor.md, "Checkpoints").
 *
 * Layout of a save directory DIR:
 *   DIR/iter_0000002/rank00000.bin ...  one shard a rank: its weights (the
 *       compute copy), the fp32 master (bf16 storage), the AdamW moments and
 *       step count, under a header naming the rank, the step and the sizes;
 *   DIR/iter_0000002/manifest.json      step, world size, the plan's
 *       fingerprint, dtype, seed and learning rate, the data position, and
 *       every shard's size and FNV-1a 64 checksum; written after every shard
 *       is on disk;
 *   DIR/latest                          "iter_0000002": written last.
 * Every file goes through px_io_write_atomic (temporary file, fsync,
 * rename).  A save killed half-way leaves `latest` at the previous complete
 * checkpoint.  The data position and the random streams need no state of
 * their own: the tokens of step i and the initial weights are pure
 * functions of (seed, i), so the step and the seed restore them.
 *
 * Loading checks everything before it changes anything: the manifest's
 * kind, version, world size, plan, dtype, seed and learning rate against
 * this run, each shard's size and checksum against the manifest, and the
 * shard's header against this rank's buffers; a mismatch is refused with a
 * message naming the file and the field. */
#ifndef PX_CKPT_H
#define PX_CKPT_H

#include <stdint.h>

#include "px_error.h"
#include "px_exec.h"

/* Collective over MPI_COMM_WORLD: writes the state after `step` completed
 * steps under dir (created if absent). */
px_status px_ckpt_save(px_exec *ex, const char *dir, int64_t step, px_error *err);

/* Collective: loads the checkpoint at dir (a save directory: its `latest`;
 * or one iter_* directory) into the engine; *step = its completed steps. */
px_status px_ckpt_load(px_exec *ex, const char *dir, int64_t *step, px_error *err);

#endif
