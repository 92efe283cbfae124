/* px_release.h — which documented release of a framework profile a named
 * release is planned as.  A profile's "releases" lists the releases whose
 * traits are known (docs/framework-schema.md, "Releases"); a run names its
 * release as the data README does, a year ("2023") or a NeMo container
 * ("nemo-24.07").  A name the profile does not list is planned as the
 * documented state nearest to it in time: one of the listed releases, or the
 * framework as it runs today, dated by the profile's "as_of". */
#ifndef PX_RELEASE_H
#define PX_RELEASE_H

#include <stdbool.h>

/* The time a release name stands for, in years: a year's middle ("2023":
 * 2023.5), a NeMo container's month ("nemo-24.03": 2024 + 2.5/12).  false
 * for a name of neither form. */
bool px_release_date(const char *name, double *years);

/* The middle of the month "YYYY-MM" (a profile's as_of), in years; false
 * when malformed. */
bool px_release_month(const char *yyyy_mm, double *years);

/* Of the n documented release names and today's state (dated as_of_years;
 * < 0: undated, not a candidate), the one nearest in time to `asked`: its
 * index, -1 for today's state.  A tie goes to the earlier (the state the
 * framework had already reached).  -2 when `asked` is not a date, or
 * nothing is a candidate. */
int px_release_nearest(const char *asked, const char *const *names, int n, double as_of_years);

#endif
