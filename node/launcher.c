/* node/launcher.c: the launcher's environment, read in one place (node/launcher.h).
 * Variables of Open MPI, MPICH/Hydra, PMI(x) and Slurm, tried in that order; a variable
 * counts only when it holds a whole non-negative decimal number. Reads the environment
 * only: no state, callable from any thread.
 */
#include <stdlib.h>

#include "launcher.h"

/* The first of the n variables that holds a whole number >= min, or -1. */
static long first_number(const char *const *vars, int n, long min) {
    for (int i = 0; i < n; i++) {
        const char *v = getenv(vars[i]);
        if (!v || !*v) continue;
        char *end;
        long r = strtol(v, &end, 10);
        if (r >= min && *end == '\0') return r;
    }
    return -1;
}

long tess__launch_rank(int local) {
    static const char *const world[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                        "SLURM_PROCID"};
    static const char *const node[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                       "PMI_LOCAL_RANK", "SLURM_LOCALID"};
    long r = first_number(local ? node : world, 4, 0);
    return r < 0 ? 0 : r;
}

long tess__launch_local_size(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                       "PMI_LOCAL_SIZE"};
    long r = first_number(vars, 3, 1);
    return r < 0 ? 0 : r;
}
