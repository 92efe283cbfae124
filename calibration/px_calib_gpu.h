/* px_calib_gpu.h — a GPU measured into a hardware profile, starting from
 * its datasheet profile (CUDA builds; px_calib_cuda.h does the measuring). */
#ifndef PX_CALIB_GPU_H
#define PX_CALIB_GPU_H

#include <stddef.h>

#include <mpi.h>

#include "px_calib.h"
#include "px_error.h"
#include "px_hw.h"

/* Starts from the datasheet profile `base` (NULL: the one the device's
 * name matches), names the profile `name` (NULL: gpu-<host>), measures
 * with px_calib_cuda and writes a line for the description into note.
 * Collective over world. */
px_status px_calib_gpu(const px_calib_opts *o, MPI_Comm world, const char *base, const char *host,
                       const char *name, px_hw *hw, char *note, size_t note_len, px_error *err);

#endif
