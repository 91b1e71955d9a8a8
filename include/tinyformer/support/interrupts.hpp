// Ctrl-C (SIGINT) taken by a thread of its own, never by a signal handler.
//
// A signal handler runs on the stack of whichever thread the signal lands in, just below that
// thread's stack pointer. oneDNN's JIT sgemm kernels (in Debian's oneDNN 2.6 and 3.7; changed
// upstream by oneDNN pull request 4855, after issue 4845) point the stack pointer into a heap
// buffer while they run, so a handler's frame landing there overwrites the heap: Ctrl-C in the
// middle of a training step crashed `train` (3 of 80 interruptions on an Intel Xeon with AMX,
// whose signal frames are large), or could silently change that step's numbers. So SIGINT is
// blocked in every thread, and one thread waits for it with sigwait, as the explorer's server
// does for its stop signals.
//
//   watch_interrupts();         first thing in a command that stops cleanly on Ctrl-C (train,
//                               sweep), before any other thread starts: threads inherit the
//                               blocked mask. Once per process; later calls do nothing.
//   watch_interrupts(true);     under a launcher (mpirun, srun), SIGTERM and SIGUSR1 as well:
//                               Open MPI 4's mpirun turns a Ctrl-C into SIGTERM to every
//                               process; Open MPI 5's kills them at once, but passes SIGUSR1 on
//                               (`kill -USR1 <mpirun's pid>` stops a run with a checkpoint).
//   CatchInterrupts interrupts; while one lives, Ctrl-C sets interrupts.requested(), which the
//                               caller polls at a safe point (the trainer: between steps).
//                               While none lives, Ctrl-C ends the process as SIGINT's default
//                               action does (or is ignored, if SIGINT was ignored when
//                               watch_interrupts() ran, as in a shell's background job).
//
//   request_interrupt();        what a Ctrl-C does, asked for in code: the Python module's
//                               train(), whose Ctrl-C Python's own handler takes, passes it on.
//
// Without watch_interrupts() (a library user, the tests) requested() stays false unless
// request_interrupt() is called, and Ctrl-C does whatever the process's own disposition says.
#pragma once

namespace tinyformer {

void watch_interrupts(bool launched = false);
void request_interrupt();  // while a CatchInterrupts lives, its requested() becomes true

class CatchInterrupts {
public:
    CatchInterrupts();  // clears requested()
    ~CatchInterrupts();
    CatchInterrupts(const CatchInterrupts&) = delete;
    CatchInterrupts& operator=(const CatchInterrupts&) = delete;
    bool requested() const;  // a Ctrl-C arrived since this one was made
};

}  // namespace tinyformer
