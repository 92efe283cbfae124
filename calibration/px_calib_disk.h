/* px_calib_disk.h — checkpoint write bandwidth: a file written and fsync'ed
 * in the directory the checkpoints would go to (the profile's own
 * directory by default), so the goodput model's ckpt_write_bw is measured
 * rather than guessed. */
#ifndef PX_CALIB_DISK_H
#define PX_CALIB_DISK_H

#include <stdint.h>

#include "px_calib.h"
#include "px_error.h"

/* Writes `bytes` to a temporary file in dir, fsyncs, removes it; *bw in
 * bytes/s. */
px_status px_calib_disk_write_bw(const px_calib_opts *o, const char *dir, int64_t bytes,
                                 double *bw, px_error *err);

#endif
