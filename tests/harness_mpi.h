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
#define TEST_FAIL_(...)                                                   \
    do {                                                                  \
        fprintf(stderr, "  rank %d: %s:%d: ", wrank, __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                                     \
        fprintf(stderr, "\n");                                            \
        MPI_Abort(MPI_COMM_WORLD, 1);                                     \
    } while (0)

/* main for a test run under mpirun: MPI initialised (MPI_THREAD_FUNNELED), wrank and wsize
 * set, setup() called on every rank, the tests run, teardown() called, when lo <= wsize <=
 * hi; otherwise every rank exits 77 (skipped). setup may end the job (MPI_Abort) when what
 * every test needs is missing. */
#define TEST_MPI_MAIN_WITH(lo_, hi_, setup_, teardown_)                                    \
    int main(int argc, char **argv) {                                                      \
        int prov_, rc_ = 77;                                                               \
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &prov_);                        \
        MPI_Comm_rank(MPI_COMM_WORLD, &wrank);                                             \
        MPI_Comm_size(MPI_COMM_WORLD, &wsize);                                             \
        if (wsize < (lo_) || wsize > (hi_)) {                                              \
            if (wrank == 0) fprintf(stderr, "SKIP: needs %d to %d ranks\n", (lo_), (hi_)); \
        } else {                                                                           \
            setup_();                                                                      \
            rc_ = test_main_(argc, argv);                                                  \
            teardown_();                                                                   \
        }                                                                                  \
        MPI_Finalize();                                                                    \
        return rc_;                                                                        \
    }

__attribute__((unused)) static void test_mpi_nothing_(void) {}

/* main without setup or teardown */
#define TEST_MPI_MAIN(lo_, hi_) TEST_MPI_MAIN_WITH(lo_, hi_, test_mpi_nothing_, test_mpi_nothing_)

#endif /* TESS_TESTS_HARNESS_MPI_H */
