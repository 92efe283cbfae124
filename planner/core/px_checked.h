/* px_checked.h — overflow-checked integer arithmetic for sizes and counts
 * derived from input (parameters, bytes, FLOPs, tokens, GPUs, experts).
 *
 * Why: a model or a command line can ask for numbers whose product does not
 * fit in 64 bits; a wrapped product makes an impossible model "fit" with
 * negative memory.  Every product of input-derived sizes goes through these:
 * the _ok forms report overflow so the caller can return an error naming
 * the input; the _sat forms saturate at INT64_MAX, so a byte count that
 * cannot be represented compares as "does not fit" against any limit. */
#ifndef PX_CHECKED_H
#define PX_CHECKED_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* *out = a * b; false (and *out = INT64_MAX) on overflow. */
static inline bool px_mul_ok(int64_t a, int64_t b, int64_t *out)
{
    if (__builtin_mul_overflow(a, b, out)) {
        *out = INT64_MAX;
        return false;
    }
    return true;
}

/* *out = a + b; false (and *out = INT64_MAX) on overflow. */
static inline bool px_add_ok(int64_t a, int64_t b, int64_t *out)
{
    if (__builtin_add_overflow(a, b, out)) {
        *out = INT64_MAX;
        return false;
    }
    return true;
}

/* a * b, or INT64_MAX when it overflows (inputs are non-negative sizes). */
static inline int64_t px_mul_sat(int64_t a, int64_t b)
{
    int64_t r;
    return px_mul_ok(a, b, &r) ? r : INT64_MAX;
}

/* a + b, or INT64_MAX when it overflows (inputs are non-negative sizes). */
static inline int64_t px_add_sat(int64_t a, int64_t b)
{
    int64_t r;
    return px_add_ok(a, b, &r) ? r : INT64_MAX;
}

/* A byte count computed in double, rounded to an integer: NaN and anything
 * at or above 2^63 become INT64_MAX (never fits), negatives stay negative
 * only down to INT64_MIN+1.  llround() of such values is undefined. */
static inline int64_t px_i64_from_double_sat(double x)
{
    if (!(x == x) || x >= 9223372036854775807.0)
        return INT64_MAX;
    if (x <= -9223372036854775807.0)
        return -INT64_MAX;
    return (int64_t)llround(x);
}

#endif
