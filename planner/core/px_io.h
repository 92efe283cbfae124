/* px_io.h — the one way Parallax writes an output file.
 *
 * Why: a plan, a hardware profile, a report or a checkpoint shard must never
 * be seen half-written, and a failed write (full disk, quota, I/O error) must
 * never pass silently or destroy the previous good file.  Every output goes
 * through px_io_write_atomic: the bytes go to a temporary file beside the
 * target, every write, fsync and close is checked, then the file is renamed
 * over the target and the directory is synced.
 *
 * One set of rules for every path a tool writes (px_io_check_target): a
 * regular file the caller may replace, or a new name in an existing
 * directory.  Anything else is refused before a byte is written, by name: an
 * empty path, a directory, a symbolic link (/dev/stdout), a device
 * (/dev/full), a FIFO, a missing parent directory.  A tool never writes
 * over anything but a regular file. */
#ifndef PX_IO_H
#define PX_IO_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "px_error.h"

/* The rules above, checked without writing: a command calls it on its
 * output options before hours of work, px_io_write_atomic again at the end. */
px_status px_io_check_target(const char *path, px_error *err);

/* px_io_check_target (or px_io_make_dir when is_dir) for a command-line
 * option: the error names the option and the path ("--html /dev/full"). */
px_status px_io_check_option(const char *option, const char *path, bool is_dir, px_error *err);

/* Creates the directory path (its parent must exist), or accepts one that is
 * already there; refuses an empty path and anything that is not a directory. */
px_status px_io_make_dir(const char *path, px_error *err);

/* Writes n bytes of data to path atomically (see above).  On failure the
 * target is unchanged, the temporary file is removed and err names the path
 * and the system's reason. */
px_status px_io_write_atomic(const char *path, const void *data, size_t n, px_error *err);

/* Serialises root with jansson's flags (e.g. JSON_SORT_KEYS | JSON_INDENT(2)),
 * adds a final newline and writes it with px_io_write_atomic. */
px_status px_io_write_json(const char *path, const json_t *root, size_t flags, px_error *err);

/* Flushes standard output and reports any write to it that failed since the
 * start (ferror), with the system's reason: "standard output: write failed:
 * No space left on device".  Every command's main calls it last. */
px_status px_io_flush_stdout(px_error *err);

/* fsync()s the directory that holds path, so a rename into it survives a crash. */
px_status px_io_sync_parent_dir(const char *path, px_error *err);

#endif
