/* px_outfile.h — text built in memory and written atomically: the whole
 * file appears under its name (temporary file in the same folder, every
 * write and the close checked, then rename) or the old one stays. */
#ifndef PX_OUTFILE_H
#define PX_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "px_error.h"

/* A growable string; zero-initialise it.  After an allocation failure
 * `failed` is set and further appends do nothing. */
typedef struct {
    char *data;
    size_t len, cap;
    bool failed;
} px_buf;

void px_buf_printf(px_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void px_buf_puts(px_buf *b, const char *s);
/* s with & < > " ' replaced by their HTML entities */
void px_buf_html(px_buf *b, const char *s);
void px_buf_free(px_buf *b);

/* Writes len bytes to path with px_io_write_atomic (its rules: a regular file
 * or a new path); "-" writes to stdout. */
px_status px_write_file_atomic(const char *path, const char *data, size_t len, px_error *err);

/* The buffer (PX_ERR_NOMEM when it failed to grow) written atomically. */
px_status px_buf_write(const px_buf *b, const char *path, px_error *err);

#endif
