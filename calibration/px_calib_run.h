/* px_calib_run.h — the frame of a `calibrate` run around the measuring: the
 * output file checked before minutes of measuring, how busy the machine
 * was, and the profile's description of the run. */
#ifndef PX_CALIB_RUN_H
#define PX_CALIB_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "px_error.h"
#include "px_hw.h"

/* Refuses an output path the profile could not be written to at the end: a
 * directory not writable, a directory given as the file, an existing file
 * not writable.  Fills out_dir (n bytes) with the file's directory, where
 * the checkpoint bandwidth is measured.  The message names -o and the path. */
px_status px_calib_check_output(const char *out_path, char *out_dir, size_t n, px_error *err);

/* The one-minute load average (/proc/loadavg), 0 when unknown. */
double px_calib_load_average(void);

/* hw->description: where and when the run measured, and how: gpu_note (a
 * GPU run's note, NULL on the CPU), the BLAS threads per rank (applied
 * here), the ranks, whether MPI was measured and the load at the start. */
void px_calib_describe(px_hw *hw, const char *host, const char *gpu_note, int blas_threads,
                       int size, bool use_mpi, double load_at_start);

#endif
