/* tests/test_pin.c: TESSERA_PIN keeps each worker inside the cores the process was bound to
 * (as mpirun or Slurm bind a rank): with the process bound to one core, every thread of the
 * runtime must still be allowed exactly that core after a GEMM ran. */
#include <dirent.h>
#include <sched.h>
#include <stdlib.h>

#include "harness.h"
#include "tessera.h"

/* The thread ids of this process now (sanitizer runtimes start threads of their own before
 * main, with the mask the process had then: only threads started later are checked). */
static int list_tids(long *tids, int cap) {
    DIR *dir = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; dir && (e = readdir(dir));)
        if (e->d_name[0] != '.' && n < cap) tids[n++] = strtol(e->d_name, NULL, 10);
    if (dir) closedir(dir);
    return n;
}

TEST(workers_stay_inside_the_binding) {
    cpu_set_t all, one;
    ASSERT(sched_getaffinity(0, sizeof all, &all) == 0);
    if (CPU_COUNT(&all) < 2) SKIP("needs two cores");
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) last = c;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    ASSERT(sched_setaffinity(0, sizeof one, &one) == 0); /* before any thread starts */
    long before[256];
    int nbefore = list_tids(before, 256);
    setenv("TESSERA_DEVICES", "none", 1);
    setenv("TESSERA_EMULATE", "2", 1);
    setenv("TESSERA_CPU_WORKER", "0", 1);
    setenv("TESSERA_PIN", "1", 1);
    double A[64 * 64], B[64 * 64], C[64 * 64];
    for (int i = 0; i < 64 * 64; i++) A[i] = B[i] = 1, C[i] = 0;
    ASSERT_OK(tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, 64, 64, 64, 1.0, A, 64, B,
                         64, 0.0, C, 64));
    ASSERT(C[0] == 64.0);
    char want[32], bad[512] = "";
    snprintf(want, sizeof want, "%d", last);
    long tids[256];
    int n = list_tids(tids, 256), checked = 0;
    for (int i = 0; i < n; i++) {
        int old = 0;
        for (int j = 0; j < nbefore; j++) old |= tids[i] == before[j];
        if (old) continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%ld/status", tids[i]);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "Cpus_allowed_list:", 18)) {
                char *v = line + 18;
                while (*v == ' ' || *v == '\t') v++;
                v[strcspn(v, "\n")] = 0;
                if (strcmp(v, want) && !bad[0])
                    snprintf(bad, sizeof bad, "thread %ld is allowed cores %s, the process only %s",
                             tids[i], v, want);
                checked++;
            }
        fclose(f);
    }
    ASSERT_MSG(!bad[0], "%s", bad);
    ASSERT_MSG(checked >= 2, "only %d threads started by tessera seen", checked);
    tess_finalize();
}

TEST_MAIN()
