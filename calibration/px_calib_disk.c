/* px_calib_disk.c — checkpoint write bandwidth (see px_calib_disk.h). */
#include "px_calib_disk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

px_status px_calib_disk_write_bw(const px_calib_opts *o, const char *dir, int64_t bytes,
                                 double *bw, px_error *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/.px-calib-XXXXXX", dir && *dir ? dir : ".");
    int fd = mkstemp(path);
    if (fd < 0)
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "cannot create a temporary file: %s",
                            strerror(errno));
    const size_t chunk = (size_t)1 << 20;
    char *buf = malloc(chunk);
    if (!buf) {
        close(fd);
        unlink(path);
        return PX_FAIL(err, PX_ERR_NOMEM, "cannot allocate %zu bytes", chunk);
    }
    for (size_t i = 0; i < chunk; i++)
        buf[i] = (char)(i * 131u);
    px_status st = PX_OK;
    double t0 = px_calib_now_s();
    for (int64_t done = 0; done < bytes && st == PX_OK;) {
        ssize_t w = write(fd, buf, chunk);
        if (w <= 0)
            st = px_error_set(err, PX_ERR_IO, path, 0, 0, "write failed: %s",
                              w < 0 ? strerror(errno) : "no progress");
        else
            done += w;
    }
    if (st == PX_OK && fsync(fd) != 0)
        st = px_error_set(err, PX_ERR_IO, path, 0, 0, "fsync failed: %s", strerror(errno));
    double dt = px_calib_now_s() - t0;
    close(fd);
    unlink(path);
    free(buf);
    if (st != PX_OK)
        return st;
    *bw = (double)bytes / dt;
    px_calib_say(o, "disk: %.0f MB written and synced at %.2f GB/s", (double)bytes / 1e6,
                 *bw / 1e9);
    return PX_OK;
}
