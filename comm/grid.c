/* comm/grid.c: P x Q process grids over MPI communicators, the MPI error wrapper, and the
 * agreement on a status (every rank returns the same error, nobody hangs).
 * Owns the grid's communicators (created here, freed by tess__comm_grid_destroy); never
 * the caller's communicator. Does not own the map (bcyclic.c) or data movement (xport.h).
 * Every function here is collective over the communicator it is given.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

int tess__comm_mpi_status(int rc, const char *call, const char *file, int line) {
    if (rc == MPI_SUCCESS) return TESS_OK;
    char err[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, err, &len) != MPI_SUCCESS) snprintf(err, sizeof err, "error %d", rc);
    return tess__fail(TESS_ECOMM, "%s:%d: %s: %s", file, line, call, err);
}

static void grid_clear(struct tess__comm_grid *g) {
    memset(g, 0, sizeof *g);
    g->at.myrow = g->at.mycol = -1;
    g->comm = g->row = g->col = MPI_COMM_NULL;
    g->rank = -1;
}

void tess__comm_grid_destroy(struct tess__comm_grid *g) {
    MPI_Comm *comms[3] = {&g->row, &g->col, &g->comm};
    for (int i = 0; i < 3; i++)
        if (*comms[i] != MPI_COMM_NULL) MPI_Comm_free(comms[i]);
    free(g->ranks);
    grid_clear(g);
}

/* Split the row and column communicators of a grid whose comm, coordinates and rank table
 * are set, and give our communicators MPI_ERRORS_RETURN. */
static int grid_split(struct tess__comm_grid *g) {
    int st = TESS__MPI(MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN));
    if (!st) st = TESS__MPI(MPI_Comm_split(g->comm, g->at.myrow, g->at.mycol, &g->row));
    if (!st) st = TESS__MPI(MPI_Comm_split(g->comm, g->at.mycol, g->at.myrow, &g->col));
    if (!st) st = TESS__MPI(MPI_Comm_set_errhandler(g->row, MPI_ERRORS_RETURN));
    if (!st) st = TESS__MPI(MPI_Comm_set_errhandler(g->col, MPI_ERRORS_RETURN));
    return st;
}

/* 'R' or 'C' if the rank table follows that order, else 0. */
static char detect_order(const struct tess__comm_grid *g) {
    int P = g->at.nprow, Q = g->at.npcol;
    bool row_major = true, col_major = true;
    for (int c = 0; c < Q; c++)
        for (int r = 0; r < P; r++) {
            int k = tess__comm_grid_rank(g, r, c);
            row_major = row_major && k == r * Q + c;
            col_major = col_major && k == c * P + r;
        }
    return row_major ? 'R' : col_major ? 'C' : 0;
}

/* A cleared grid, and the size of comm and this process's rank in it. */
static int grid_begin(MPI_Comm comm, struct tess__comm_grid *g, int *size, int *rank) {
    grid_clear(g);
    int st = TESS__MPI(MPI_Comm_size(comm, size));
    if (!st) st = TESS__MPI(MPI_Comm_rank(comm, rank));
    return st;
}

int tess__comm_grid_create(MPI_Comm comm, int nprow, int npcol, char order,
                           struct tess__comm_grid *g) {
    int size, rank;
    int st = grid_begin(comm, g, &size, &rank);
    if (st) return st;
    if (order == 'r') order = 'R';
    if (order == 'c') order = 'C';
    if (nprow == 0 && npcol == 0) tess__comm_grid_shape(size, &nprow, &npcol);

    /* The arguments must be the same everywhere (or the splits below would not match):
     * one reduction gives the minimum and the maximum of each. */
    int v[6] = {nprow, -nprow, npcol, -npcol, order, -order}, r[6];
    st = TESS__MPI(MPI_Allreduce(v, r, 6, MPI_INT, MPI_MIN, comm));
    if (st) return st;
    if (r[0] != -r[1] || r[2] != -r[3] || r[4] != -r[5])
        return tess__fail(TESS_EINVAL,
                          "grid arguments differ across ranks: nprow %d..%d, npcol %d..%d, "
                          "order %d..%d",
                          r[0], -r[1], r[2], -r[3], r[4], -r[5]);
    if (nprow < 1 || npcol < 1)
        return tess__fail(TESS_EINVAL, "grid %d x %d: nprow and npcol must be >= 1", nprow, npcol);
    if (order != 'R' && order != 'C')
        return tess__fail(TESS_EINVAL, "grid order '%c' must be 'R' or 'C'", order);
    if ((int64_t)nprow * npcol > size)
        return tess__fail(TESS_EINVAL,
                          "grid %d x %d needs %lld processes; the communicator "
                          "has %d",
                          nprow, npcol, (long long)nprow * npcol, size);

    const int in = rank < nprow * npcol;
    MPI_Comm sub;
    st = TESS__MPI(MPI_Comm_split(comm, in ? 0 : MPI_UNDEFINED, rank, &sub));
    if (st) return st;
    g->at.nprow = nprow;
    g->at.npcol = npcol;
    g->order = order;
    if (!in) return TESS_OK; /* outside the grid: coordinates -1, null communicators */

    g->comm = sub;
    g->rank = rank; /* ranks below nprow * npcol keep their order in the split */
    g->at.myrow = order == 'R' ? rank / npcol : rank % nprow;
    g->at.mycol = order == 'R' ? rank % npcol : rank / nprow;
    g->ranks = malloc(sizeof *g->ranks * (size_t)nprow * (size_t)npcol);
    if (!g->ranks) st = tess__fail(TESS_ENOMEM, "grid rank table");
    for (int c = 0; !st && c < npcol; c++)
        for (int p = 0; p < nprow; p++)
            g->ranks[p + c * nprow] = order == 'R' ? p * npcol + c : c * nprow + p;
    /* every grid rank reaches the same collectives whatever happened locally */
    st = tess__comm_agree_on(sub, st);
    if (!st) st = grid_split(g);
    if (st) tess__comm_grid_destroy(g);
    return st;
}

int tess__comm_grid_from_blacs(MPI_Comm comm, int nprow, int npcol, int myrow, int mycol,
                               struct tess__comm_grid *g) {
    int size, rank;
    int st = grid_begin(comm, g, &size, &rank);
    if (st) return st;
    int *all = malloc(sizeof *all * 4 * (size_t)size);
    int *table = malloc(sizeof *table * (size_t)size);
    st = (all && table) ? TESS_OK : tess__fail(TESS_ENOMEM, "grid description table");
    st = tess__comm_agree_on(comm, st);
    if (st) goto out;

    /* Every rank sees every description, so every rank finds the same first problem. */
    int mine[4] = {nprow, npcol, myrow, mycol};
    st = TESS__MPI(MPI_Allgather(mine, 4, MPI_INT, all, 4, MPI_INT, comm));
    if (st) goto out;
    nprow = all[0];
    npcol = all[1];
    if ((int64_t)nprow * npcol != size || nprow < 1 || npcol < 1) {
        st = tess__fail(TESS_EINVAL,
                        "grid %d x %d (rank 0's description) does not match the "
                        "communicator's %d processes",
                        nprow, npcol, size);
        goto out;
    }
    for (int i = 0; i < size; i++) table[i] = -1;
    for (int k = 0; k < size && !st; k++) {
        const int *d = all + 4 * k;
        if (d[0] != nprow || d[1] != npcol)
            st = tess__fail(TESS_EINVAL,
                            "rank %d describes a %d x %d grid, rank 0 a %d x %d "
                            "grid",
                            k, d[0], d[1], nprow, npcol);
        else if (d[2] < 0 || d[2] >= nprow || d[3] < 0 || d[3] >= npcol)
            st = tess__fail(TESS_EINVAL,
                            "rank %d: process (%d,%d) is outside the %d x %d "
                            "grid",
                            k, d[2], d[3], nprow, npcol);
        else if (table[d[2] + d[3] * nprow] >= 0)
            st = tess__fail(TESS_EINVAL, "ranks %d and %d both claim process (%d,%d)",
                            table[d[2] + d[3] * nprow], k, d[2], d[3]);
        else
            table[d[2] + d[3] * nprow] = k;
    }
    if (st) goto out;

    st = TESS__MPI(MPI_Comm_dup(comm, &g->comm));
    if (st) goto out;
    g->at = (struct tess__comm_coords){nprow, npcol, myrow, mycol};
    g->rank = rank;
    g->ranks = table;
    table = NULL;
    g->order = detect_order(g);
    st = grid_split(g);
    if (st) tess__comm_grid_destroy(g);
out:
    free(all);
    free(table);
    return st;
}

int tess__comm_grid_flat(struct tess__comm_grid *g, struct tess__comm_grid **flat) {
    *flat = NULL;
    if (!g->flat) { /* (the same on every process: built and agreed together) */
        struct tess__comm_grid *f = calloc(1, sizeof *f);
        int st = f ? TESS_OK : tess__fail(TESS_ENOMEM, "flat grid: out of host memory");
        st = tess__comm_agree_on(g->comm, st);
        if (!st)
            st = tess__comm_grid_from_blacs(g->comm, 1, g->at.nprow * g->at.npcol, 0, g->rank, f);
        int built = !st;
        st = tess__comm_agree_on(g->comm, st);
        if (st) {
            if (built) tess__comm_grid_destroy(f);
            free(f);
            return st;
        }
        g->flat = f;
    }
    *flat = g->flat;
    return TESS_OK;
}

int tess__comm_agree_on(MPI_Comm comm, int status) {
    if (comm == MPI_COMM_NULL) return status;
    int rank;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return tess__fail(TESS_ECOMM, "tess__comm_agree: MPI_Comm_rank failed");
    /* MINLOC: the smallest status, and the lowest rank that has it */
    int in[2] = {status < TESS_OK ? status : TESS_OK, rank}, res[2];
    int st = TESS__MPI(MPI_Allreduce(in, res, 1, MPI_2INT, MPI_MINLOC, comm));
    if (st) return st;
    if (res[0] == TESS_OK) return TESS_OK;
    char msg[512];
    if (rank == res[1]) snprintf(msg, sizeof msg, "%s", tess_last_error());
    st = TESS__MPI(MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, res[1], comm));
    if (st) return st;
    msg[sizeof msg - 1] = '\0';
    /* a message agreed before (an inner agreement) keeps its one "rank N: " */
    const char *d = msg + 5;
    if (!strncmp(msg, "rank ", 5) && *d >= '0' && *d <= '9') {
        while (*d >= '0' && *d <= '9') d++;
        if (d[0] == ':' && d[1] == ' ') return tess__fail(res[0], "%s", msg);
    }
    return tess__fail(res[0], "rank %d: %s", res[1], msg);
}

int tess__comm_agree(const struct tess__comm_grid *g, int status) {
    return tess__comm_agree_on(g->comm, status);
}
