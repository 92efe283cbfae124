/* px_release.c — the documented release a named release is planned as
 * (px_release.h). */
#include "px_release.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

static bool digits(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

static int number(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++)
        v = 10 * v + (s[i] - '0');
    return v;
}

/* the middle of month m (1..12) of year y, in years */
static double mid_month(int y, int m) { return y + (m - 0.5) / 12.0; }

bool px_release_date(const char *name, double *years)
{
    if (!name)
        return false;
    if (strlen(name) == 4 && digits(name, 4)) {
        *years = number(name, 4) + 0.5;
        return true;
    }
    /* nemo-YY.MM */
    if (strlen(name) == 10 && strncmp(name, "nemo-", 5) == 0 && digits(name + 5, 2) &&
        name[7] == '.' && digits(name + 8, 2)) {
        int m = number(name + 8, 2);
        if (m < 1 || m > 12)
            return false;
        *years = mid_month(2000 + number(name + 5, 2), m);
        return true;
    }
    return false;
}

bool px_release_month(const char *yyyy_mm, double *years)
{
    if (!yyyy_mm || strlen(yyyy_mm) != 7 || !digits(yyyy_mm, 4) || yyyy_mm[4] != '-' ||
        !digits(yyyy_mm + 5, 2))
        return false;
    int m = number(yyyy_mm + 5, 2);
    if (m < 1 || m > 12)
        return false;
    *years = mid_month(number(yyyy_mm, 4), m);
    return true;
}

int px_release_nearest(const char *asked, const char *const *names, int n, double as_of_years)
{
    double t;
    if (!px_release_date(asked, &t))
        return -2;
    int best = -2;
    double best_dist = INFINITY, best_date = 0.0;
    for (int i = -1; i < n; i++) { /* -1: today's state */
        double d = as_of_years;
        if (i >= 0 && !px_release_date(names[i], &d))
            continue;
        if (d < 0.0)
            continue;
        double dist = fabs(d - t);
        if (dist < best_dist - 1e-9 || (fabs(dist - best_dist) <= 1e-9 && d < best_date)) {
            best = i;
            best_dist = dist;
            best_date = d;
        }
    }
    return best;
}
