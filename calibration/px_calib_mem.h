/* px_calib_mem.h — memory bandwidth for the element-wise operators.
 *
 * A STREAM-like copy (c = a) and triad (a = b + s*c) over float arrays larger
 * than the last-level cache, counted as STREAM counts them (bytes read +
 * bytes written, no write-allocate traffic).  The triad is what hbm_bw
 * records: a norm, an activation or an optimizer update reads one or two
 * arrays and writes one, like the triad. */
#ifndef PX_CALIB_MEM_H
#define PX_CALIB_MEM_H

#include <stdint.h>

#include "px_calib.h"
#include "px_error.h"

typedef struct {
    double copy_bw;      /* bytes/s */
    double triad_bw;     /* bytes/s */
    int64_t array_bytes; /* size of each of the three arrays */
} px_calib_mem_result;

/* Array size used: 2 x the last-level cache as the OS reports it, within
 * 32..128 MB, so the arrays stream from memory. */
int64_t px_calib_mem_array_bytes(void);

px_status px_calib_mem_run(const px_calib_opts *o, px_calib_mem_result *r, px_error *err);

#endif
