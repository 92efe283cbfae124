/* px_calib_run.c — the frame of a `calibrate` run (px_calib_run.h). */
#include "px_calib_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "px_calib.h"
#include "px_io.h"

px_status px_calib_check_output(const char *out_path, char *out_dir, size_t n, px_error *err)
{
    /* the output rules of every file a tool writes (px_io.h) */
    PX_TRY(px_io_check_option("-o", out_path, false, err));
    snprintf(out_dir, n, "%s", out_path);
    char *slash = strrchr(out_dir, '/');
    if (slash == out_dir)
        out_dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(out_dir, n, ".");
    return PX_OK;
}

double px_calib_load_average(void)
{
    double load = 0.0;
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf", &load) != 1)
            load = 0.0;
        fclose(lf);
    }
    return load;
}

void px_calib_describe(px_hw *hw, const char *host, const char *gpu_note, int blas_threads,
                       int size, bool use_mpi, double load_at_start)
{
    char when[64];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    if (gpu_note)
        snprintf(hw->description, sizeof hw->description,
                 "calibrated on %.32s at %.20s: %.158s; %d rank(s)",
                 host, when, gpu_note, size);
    else
        snprintf(hw->description, sizeof hw->description,
                 "calibrated on %.60s at %.24s: fp32 BLAS GEMM, %d thread(s) per rank%s%.20s; "
                 "%d rank(s)%s; load average %.2f at the start", host, when,
                 px_calib_set_blas_threads(blas_threads),
                 coretype ? ", OPENBLAS_CORETYPE=" : "", coretype ? coretype : "", size,
                 use_mpi ? ", MPI measured" : ", MPI not measured", load_at_start);
}
