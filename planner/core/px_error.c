#include "px_error.h"

#include <stdio.h>
#include <string.h>

px_status px_error_set(px_error *err, px_status code, const char *file, int line,
                       int column, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    err->line = line;
    err->column = column;
    err->cap = NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void px_error_clear(px_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

const char *px_status_name(px_status code)
{
    switch (code) {
    case PX_OK: return "ok";
    case PX_ERR_IO: return "i/o error";
    case PX_ERR_PARSE: return "parse error";
    case PX_ERR_INVALID: return "invalid input";
    case PX_ERR_NOT_FOUND: return "not found";
    case PX_ERR_INFEASIBLE: return "infeasible";
    case PX_ERR_NOMEM: return "out of memory";
    case PX_ERR_SOLVER: return "solver error";
    case PX_ERR_MPI: return "MPI error";
    case PX_ERR_CUDA: return "CUDA error";
    case PX_ERR_UNSUPPORTED: return "unsupported";
    case PX_ERR_INTERNAL: return "internal error";
    case PX_ERR_USAGE: return "usage error";
    }
    return "unknown error";
}

void px_error_format(const px_error *err, char *buf, int buf_len)
{
    if (!err || buf_len <= 0)
        return;
    if (err->file[0] && err->line > 0 && err->column > 0)
        snprintf(buf, (size_t)buf_len, "%s:%d:%d: %s", err->file, err->line, err->column, err->msg);
    else if (err->file[0] && err->line > 0)
        snprintf(buf, (size_t)buf_len, "%s:%d: %s", err->file, err->line, err->msg);
    else if (err->file[0])
        snprintf(buf, (size_t)buf_len, "%s: %s", err->file, err->msg);
    else
        snprintf(buf, (size_t)buf_len, "%s", err->msg);
}
