/* px_fitted.h — the provenance of a profile fitted to measured runs
 * (`calibrate --from-runs`, docs/calibration.md): which runs, from which base
 * profile, and each fitted field's value before and after.  Hardware and
 * framework profiles carry it as their "fitted" object (docs/hw-schema.md,
 * docs/framework-schema.md); a profile without it was not fitted. */
#ifndef PX_FITTED_H
#define PX_FITTED_H

#include <jansson.h>

#include "px_error.h"

#define PX_FITTED_MAX_RUNS 32
#define PX_FITTED_MAX_FACTORS 8
#define PX_FITTED_ID_LEN 96

typedef struct {
    char field[32];  /* the profile field fitted (its name in the profile) */
    double base;     /* its value in the base profile */
    double fitted;   /* its value here (equal to the field's) */
} px_fitted_factor;

typedef struct {
    char base[128];  /* the base profile: a name or a path, as given */
    int n_runs;      /* 0: not fitted */
    char runs[PX_FITTED_MAX_RUNS][PX_FITTED_ID_LEN]; /* the ids of the runs fitted on */
    int n_factors;
    px_fitted_factor factors[PX_FITTED_MAX_FACTORS];
} px_fitted;

/* Reads the "fitted" object v (strict: keys base, runs, factors; every
 * factor an object of base and fitted, its name one of `fields`, a
 * NULL-terminated list).  file names the input in messages. */
px_status px_fitted_read(json_t *v, const char *file, const char *const *fields,
                         px_fitted *out, px_error *err);

/* The "fitted" object of f (a new reference), NULL when out of memory. */
json_t *px_fitted_to_json(const px_fitted *f);

/* The factor of field `field`, NULL if it was not fitted. */
const px_fitted_factor *px_fitted_find(const px_fitted *f, const char *field);

/* Checks that every fitted factor's value is what the profile holds:
 * value_of(field) returns the profile's value of a field. */
px_status px_fitted_check(const px_fitted *f, const char *file,
                          double (*value_of)(const void *profile, const char *field),
                          const void *profile, px_error *err);

#endif
