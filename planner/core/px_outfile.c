/* px_outfile.c — in-memory text and atomic file writes. */
#include "px_outfile.h"

#include "px_io.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool grow(px_buf *b, size_t need)
{
    if (b->failed)
        return false;
    if (b->len + need + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + need + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void px_buf_printf(px_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if (!grow(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void px_buf_puts(px_buf *b, const char *s)
{
    size_t n = strlen(s);
    if (!grow(b, n))
        return;
    memcpy(b->data + b->len, s, n + 1);
    b->len += n;
}

void px_buf_html(px_buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': px_buf_puts(b, "&amp;"); break;
        case '<': px_buf_puts(b, "&lt;"); break;
        case '>': px_buf_puts(b, "&gt;"); break;
        case '"': px_buf_puts(b, "&quot;"); break;
        case '\'': px_buf_puts(b, "&#39;"); break;
        default: {
            char c[2] = {*s, '\0'};
            px_buf_puts(b, c);
        }
        }
    }
}

void px_buf_free(px_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

px_status px_write_file_atomic(const char *path, const char *data, size_t len, px_error *err)
{
    if (path && !strcmp(path, "-")) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
            return px_error_set(err, PX_ERR_IO, "stdout", 0, 0, "writing failed: %s",
                                strerror(errno));
        return PX_OK;
    }
    return px_io_write_atomic(path, data, len, err);
}

px_status px_buf_write(const px_buf *b, const char *path, px_error *err)
{
    if (b->failed)
        return px_error_set(err, PX_ERR_NOMEM, path, 0, 0, "out of memory building the file");
    return px_write_file_atomic(path, b->data ? b->data : "", b->len, err);
}
