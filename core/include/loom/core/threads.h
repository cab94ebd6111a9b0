// CPU math threads per process. Default: the cores this process may run on (its CPU affinity, which
// an MPI launcher may have narrowed to one core), and no more than the machine's cores / local
// ranks (so unbound ranks sharing a machine do not oversubscribe it); override with
// LOOM_NUM_THREADS or --threads. Asking for more threads than the affinity's cores logs one warning.
#pragma once

namespace loom {

// Threads of loom's CPU pool (its loops and GEMM panels) in this process; num_threads() is
// default_num_threads() until set.
void set_num_threads(int threads);
int num_threads();
// Cores this process may run on (sched_getaffinity), at least 1.
int affinity_cores();
// Ranks on this node as the MPI launcher's environment says (Open MPI, MPICH, MVAPICH local size
// variables); 0 when none is set.
int local_rank_count();
// LOOM_NUM_THREADS if set, else min(affinity_cores(), hardware cores / local_rank_count()), at
// least 1.
int default_num_threads();

}  // namespace loom
