/* px_error_mpi.h — MPI return codes as px_status: the one MPI-error wrapper
 * of the project.  Header-only (static inline) so that the core library,
 * which `plan` links without MPI, does not depend on MPI; include it where
 * MPI is called. */
#ifndef PX_ERROR_MPI_H
#define PX_ERROR_MPI_H

#include <mpi.h>

#include "px_error.h"

/* PX_OK, or PX_ERR_MPI with this rank, `what` (the call) and MPI's error
 * string in err. */
static inline px_status px_mpi_check(int rc, const char *what, px_error *err)
{
    if (rc == MPI_SUCCESS)
        return PX_OK;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return PX_FAIL(err, PX_ERR_MPI, "rank %d: %s failed: %s", rank, what, msg);
}

/* Returns from the enclosing px_status function when the MPI call fails. */
#define PX_MPI_TRY(err, call) PX_TRY(px_mpi_check((call), #call, (err)))

#endif
