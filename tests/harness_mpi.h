/* tests/harness_mpi.h: harness.h for tests run under mpirun. A failed assertion on any rank
 * prints the rank and aborts the whole job (MPI_Abort), so no rank waits forever in a
 * collective for one that has stopped. Defines wrank and wsize (MPI_COMM_WORLD rank and
 * size), which the test's main sets. */
#ifndef TESS_TESTS_HARNESS_MPI_H
#define TESS_TESTS_HARNESS_MPI_H

#include <mpi.h>

#include "harness.h"

static int wrank, wsize;

#undef TEST_FAIL_
#define TEST_FAIL_(...)                                                              \
    do {                                                                             \
        fprintf(stderr, "  rank %d: %s:%d: ", wrank, __FILE__, __LINE__);            \
        fprintf(stderr, __VA_ARGS__);                                                \
        fprintf(stderr, "\n");                                                       \
        MPI_Abort(MPI_COMM_WORLD, 1);                                                \
    } while (0)

#endif /* TESS_TESTS_HARNESS_MPI_H */
