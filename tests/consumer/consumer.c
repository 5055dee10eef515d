/* tests/consumer/consumer.c: a user program built against the installed tessera: one small
 * DGEMM checked by hand. Exit 0 when the product is right. */
#include <stdio.h>
#include <tessera.h>

int main(void) {
    double A[4] = {1, 2, 3, 4}, B[4] = {5, 6, 7, 8}, C[4] = {0, 0, 0, 0};
    int rc = tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, 2, 2, 2, 1.0, A, 2, B, 2, 0.0,
                        C, 2);
    /* [1 3; 2 4] * [5 7; 6 8] = [23 31; 34 46] */
    int ok = rc == TESS_OK && C[0] == 23 && C[1] == 34 && C[2] == 31 && C[3] == 46;
    printf("consumer: %s (%s)\n", ok ? "ok" : "WRONG", tess_strerror(rc));
    tess_finalize();
    return ok ? 0 : 1;
}
