/* px_io.h — the one way Parallax writes an output file.
 *
 * Why: a plan, a hardware profile, a report or a checkpoint shard must never
 * be seen half-written, and a failed write (full disk, quota, I/O error) must
 * never pass silently or destroy the previous good file.  Every output goes
 * through px_io_write_atomic: the bytes go to a temporary file beside the
 * target, every write, fsync and close is checked, then the file is renamed
 * over the target and the directory is synced.
 *
 * A target that exists and is not a regular file (/dev/stdout, /dev/full, a
 * FIFO) cannot be replaced by a rename: it is written in place, every write
 * and close still checked, so /dev/full fails with "No space left on device". */
#ifndef PX_IO_H
#define PX_IO_H

#include <stddef.h>

#include <jansson.h>

#include "px_error.h"

/* Writes n bytes of data to path atomically (see above).  On failure the
 * target is unchanged, the temporary file is removed and err names the path
 * and the system's reason. */
px_status px_io_write_atomic(const char *path, const void *data, size_t n, px_error *err);

/* Serialises root with jansson's flags (e.g. JSON_SORT_KEYS | JSON_INDENT(2)),
 * adds a final newline and writes it with px_io_write_atomic. */
px_status px_io_write_json(const char *path, const json_t *root, size_t flags, px_error *err);

/* fsync()s the directory that holds path, so a rename into it survives a crash. */
px_status px_io_sync_parent_dir(const char *path, px_error *err);

#endif
