/* node/launcher.h: what the job launcher (mpirun, srun, a PMI) told this process through
 * its environment: its rank and the number of ranks on its node. node/launcher.c is the one
 * reader of those variables; the node runtime (trace file names, worker pinning) and the
 * distributed layer (comm/: how an MPI wait backs off) both ask here.
 */
#ifndef TESS_LAUNCHER_H
#define TESS_LAUNCHER_H

/* The rank an MPI or Slurm launch gave this process, among all its ranks or (local) among
 * those of its node; 0 without a launcher. */
long tess__launch_rank(int local);
/* How many ranks the launcher started on this node; 0 when it did not say. */
long tess__launch_local_size(void);

#endif
