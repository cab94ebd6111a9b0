// CPU math threads per process. Default: cores / local ranks (so ranks sharing a machine do not
// oversubscribe it); override with LOOM_NUM_THREADS or --threads.
#pragma once

namespace loom {

// Threads of loom's CPU pool (its loops and GEMM panels) in this process.
void set_num_threads(int threads);
int num_threads();
// LOOM_NUM_THREADS if set, else hardware cores / ranks on this node (from the MPI launcher's
// environment), at least 1.
int default_num_threads();

}  // namespace loom
