/* px_blocking.c — blocking communication (px_blocking.h). */
#include "px_blocking.h"

double px_blocking_dp_exposed(const px_parallel *par, double total, double exposed)
{
    return par->dp_overlap ? exposed : total;
}
