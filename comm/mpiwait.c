/* comm/mpiwait.c: tess__mpi_wait, the MPI_Wait of every exchange in comm/. It spins on
 * MPI_Test where the rank's CPU set has two cores for every rank of its node, and backs
 * off (short sleeps, up to 100 us) where cores are scarce: a spinning waiter (Open MPI's
 * MPI_Wait yields and spins) starves the rank the others wait for when ranks and threads
 * outnumber the cores (reliability.md, B11), while a sleeping one progresses a large
 * message of a copy-in/copy-out transport (vader without CMA, TCP) one fragment per test.
 * The node's rank count comes from the launcher (node/launcher.c); without one the waiter
 * backs off. The mode is chosen once per process.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <time.h>

#include "comm.h"
#include "node_comm.h"

static pthread_once_t wait_once = PTHREAD_ONCE_INIT;
static bool wait_spins;

static void wait_mode(void) {
    long local = tess__launch_local_size();
    cpu_set_t set;
    int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    wait_spins = local > 0 && cores >= 2 * local;
}

int tess__mpi_wait(MPI_Request *req) {
    pthread_once(&wait_once, wait_mode);
    if (wait_spins) {
        for (;;) {
            int done = 0;
            int st = TESS__MPI(MPI_Test(req, &done, MPI_STATUS_IGNORE));
            if (st || done) return st;
        }
    }
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long nap = 0; /* ns */
    for (;;) {
        int done = 0;
        int st = TESS__MPI(MPI_Test(req, &done, MPI_STATUS_IGNORE));
        if (st || done) return st;
        if (!nap) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) < 100000L)
                continue;
            nap = 2000;
        }
        struct timespec ts = {0, nap};
        nanosleep(&ts, NULL);
        if (nap < 100000L) nap *= 2;
    }
}
