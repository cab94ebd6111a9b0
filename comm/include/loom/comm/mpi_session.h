// MPI start-up for every loom process.
//
// Initialisation is lazy and idempotent: the first comm object (or an explicit ensure_mpi()) starts
// MPI with MPI_THREAD_MULTIPLE, so a program started without mpirun is simply a world of one. Once
// the rank is known it is stamped on loom errors and log lines. If loom started MPI, it also
// finalises it at exit unless the app already did. MPI_Init_thread and MPI_Finalize wait for
// every rank: both run under the watchdog (watchdog.h, WatchdogReach::process).
#pragma once

#include <exception>

namespace loom::comm {

void ensure_mpi();
int world_rank();
int world_size();
// True when several threads may call MPI at once (the gradient bucketer's progress thread needs it).
bool mpi_thread_multiple();
// MPI_Finalize if MPI runs, under the watchdog (a rank that stopped before its end would hold the
// others in it for ever); apps call it before they return from main.
void finalize_mpi();

// How a loom executable ends on an error: exit status 3 for a loom::CommunicationError (a failed
// MPI or NCCL call, as the watchdog's exit: a peer or its connection lost, which a restart may get
// past), 1 for any other error (bad input, a damaged file).
int exit_status(const std::exception& error);
// Ends a job on an error and returns `status`. Where every rank fails (they agree within 10 s on a
// communicator of their own; MPI is started for it if a launcher started this process), the lowest
// rank whose message names the cause prints "loom: error: MESSAGE" once and every rank finalises;
// a rank failing alone prints "loom: error (rank R): MESSAGE" and aborts the job. The message
// loses loom's source locations (" [file.cpp:42, rank 3]") unless LOOM_DEBUG=1.
int end_with_error(const char* message, int status);

}  // namespace loom::comm
