/* px_jfield.h — table-driven mapping between a C struct and a JSON object.
 *
 * Why: the model presets, the hardware profiles and the plan file all read and
 * write flat structs, strictly (unknown keys and wrong types are errors that
 * name the JSON path and the allowed values).  One table of field descriptors
 * per struct drives both directions, so adding a field is one line.
 *
 * Only the data layer (px_model.c, px_hw.c, px_plan_io.c) includes this: it
 * pulls in <jansson.h>. */
#ifndef PX_JFIELD_H
#define PX_JFIELD_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "px_error.h"

typedef enum {
    PX_JF_INT,   /* int */
    PX_JF_I64,   /* int64_t (bytes, counts): JSON integer only */
    PX_JF_DBL,   /* double: JSON integer or real */
    PX_JF_BOOL,  /* bool */
    PX_JF_STR,   /* char[size] */
    PX_JF_ENUM,  /* int-backed enum, written as one of names[] */
    PX_JF_DBYTES /* double holding a byte count: a JSON integer (bytes are integers) */
} px_jf_type;

typedef struct {
    const char *key;
    px_jf_type type;
    size_t offset;
    size_t size;               /* PX_JF_STR: buffer size (incl. NUL) */
    bool required;             /* absent -> error; else the caller's value stays */
    double min;                /* numeric lower bound (inclusive) */
    const char *const *names;  /* PX_JF_ENUM: allowed names, index = value */
    int n_names;
    double max;                /* numeric upper bound (inclusive); 0: the type's own */
} px_jfield;

/* Reads obj into base by the table.  path is the JSON path of obj used in
 * messages ("" for the root, else "parallel" etc.); file names the input.
 * extra_keys (NULL-terminated, may be NULL) are keys the caller handles
 * itself and that the unknown-key check must accept. */
px_status px_jf_read(const px_jfield *fields, int n_fields, json_t *obj, void *base,
                     const char *file, const char *path, const char *const *extra_keys,
                     px_error *err);

/* Checks the numeric fields of base (already filled, e.g. from another
 * format) against the table's bounds; the message names file, path.key, the
 * value and the allowed range, as px_jf_read's does. */
px_status px_jf_check_bounds(const px_jfield *fields, int n_fields, const void *base,
                             const char *file, const char *path, px_error *err);

/* Adds every field of the table to obj (which must be an object).  Fails on a
 * non-finite double (JSON has no NaN/inf), naming the field. */
px_status px_jf_write(const px_jfield *fields, int n_fields, const void *base, json_t *obj,
                      const char *path, px_error *err);

/* "a, b, c" of the table's keys plus extra_keys, into buf. */
void px_jf_key_list(const px_jfield *fields, int n_fields, const char *const *extra_keys,
                    char *buf, size_t buf_len);

/* Joins path and key as "path.key" (or "key" at the root) into buf. */
void px_jf_join(char *buf, size_t buf_len, const char *path, const char *key);

/* Reads a JSON file (PX_ERR_IO if unreadable, PX_ERR_PARSE with line and
 * column if malformed). */
px_status px_jf_load_file(const char *path, json_t **out, px_error *err);

/* Name of a JSON value's type, for messages. */
const char *px_jf_type_name(const json_t *v);

#endif
