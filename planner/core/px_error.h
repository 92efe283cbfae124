/* px_error.h — the status codes and the caller-owned error record that every
 * library function of Parallax fills instead of printing or exiting.
 *
 * Convention: a function that can fail returns px_status and takes a
 * `px_error *err` last (may be NULL).  On failure it fills err with a code,
 * where the problem is (a file and line/column when the input was a file) and a
 * one-line message naming the field and the allowed values.  Only `main`
 * turns an error into a message on stderr and an exit code. */
#ifndef PX_ERROR_H
#define PX_ERROR_H

#include <stdarg.h>

typedef enum {
    PX_OK = 0,
    PX_ERR_IO,          /* a file could not be opened, read or written */
    PX_ERR_PARSE,       /* malformed input (JSON syntax: line and column set) */
    PX_ERR_INVALID,     /* well-formed input with a bad value or a missing field */
    PX_ERR_NOT_FOUND,   /* an unknown name (model, profile...) */
    PX_ERR_INFEASIBLE,  /* the request cannot be satisfied (nothing fits...) */
    PX_ERR_NOMEM,
    PX_ERR_SOLVER,      /* GLPK failed or hit its limits */
    PX_ERR_MPI,
    PX_ERR_CUDA,
    PX_ERR_UNSUPPORTED, /* valid but not implemented by this backend */
    PX_ERR_INTERNAL,
    PX_ERR_USAGE        /* a bad command line (an unknown, repeated or malformed option) */
} px_status;

typedef struct {
    px_status code;
    char file[512];   /* input file the error is about, "" if none */
    int line;         /* 1-based, 0 if unknown */
    int column;       /* 1-based, 0 if unknown */
    char msg[1024];
    /* px_plan_check's refusal by capability: the px_caps field the consumer
     * lacks ("schedules", "etp"...; a string constant).  NULL otherwise:
     * px_error_set clears it. */
    const char *cap;
} px_error;

/* Fills err (if not NULL) and returns code.  file may be NULL. */
px_status px_error_set(px_error *err, px_status code, const char *file, int line,
                       int column, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Clears err to PX_OK. */
void px_error_clear(px_error *err);

/* Short name of a status ("parse error", "not found"...). */
const char *px_status_name(px_status code);

/* Formats err as "file:line:col: message" (omitting unknown parts) into buf. */
void px_error_format(const px_error *err, char *buf, int buf_len);

/* Convenience: set an error without a file position. */
#define PX_FAIL(err, code, ...) px_error_set((err), (code), NULL, 0, 0, __VA_ARGS__)

/* Propagates a px_status from a callee unchanged (err already filled): the
 * one propagate macro of the project.  MPI return codes: px_error_mpi.h. */
#define PX_TRY(call)                                                                  \
    do {                                                                              \
        px_status px_try_st_ = (call);                                                \
        if (px_try_st_ != PX_OK)                                                      \
            return px_try_st_;                                                        \
    } while (0)

#endif
