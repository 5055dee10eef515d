/* tests/test_pin.c: TESSERA_PIN keeps each worker inside the cores the process was bound to
 * (as mpirun or Slurm bind a rank): with the process bound to one core, every thread of the
 * runtime must still be allowed exactly that core after a GEMM ran. */
#include <dirent.h>
#include <sched.h>
#include <stdlib.h>

#include "harness.h"
#include "tessera.h"

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
    setenv("TESSERA_DEVICES", "none", 1);
    setenv("TESSERA_EMULATE", "2", 1);
    setenv("TESSERA_CPU_WORKER", "0", 1);
    setenv("TESSERA_PIN", "1", 1);
    double A[64 * 64], B[64 * 64], C[64 * 64];
    for (int i = 0; i < 64 * 64; i++) A[i] = B[i] = 1, C[i] = 0;
    ASSERT_OK(tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, 64, 64, 64, 1.0, A, 64, B,
                         64, 0.0, C, 64));
    ASSERT(C[0] == 64.0);
    char want[32];
    snprintf(want, sizeof want, "%d", last);
    DIR *dir = opendir("/proc/self/task");
    ASSERT(dir);
    int threads = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.') continue;
        char path[300], line[256], name[64] = "?";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *cf = fopen(path, "r");
        if (cf) {
            if (fgets(name, sizeof name, cf)) name[strcspn(name, "\n")] = 0;
            fclose(cf);
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "Cpus_allowed_list:", 18)) {
                char *v = line + 18;
                while (*v == ' ' || *v == '\t') v++;
                v[strcspn(v, "\n")] = 0;
                ASSERT_MSG(!strcmp(v, want), "thread %s (%s) is allowed cores %s, the process only %s",
                           e->d_name, name, v, want);
                threads++;
            }
        fclose(f);
    }
    closedir(dir);
    ASSERT_MSG(threads >= 3, "only %d threads seen", threads);
    tess_finalize();
}

TEST_MAIN()
