// Threads: how a step's work is split, and how many threads run the parts now.
//
// `--threads N` (train.threads) fixes the split: a weight's gradient is summed as N runs of
// rows, added in order, and that is the one place the numbers depend on N. Every other loop
// and oneDNN product gives the same bits for any number of threads. So how many threads run
// the N parts can change from step to step without changing a number, and share_cores()
// changes it: all N while the CPUs are free, fewer while other processes keep some of them
// busy (a second training, a build, a browser), back to N when they are gone.
//
// Why: OpenMP's threads (libgomp's, oneDNN's and the own loops') wait for each other by
// spinning, up to some milliseconds at every loop's end. Alone that is what makes a
// step fast. With more threads than free CPUs, a thread spins while the one it waits for
// sits descheduled behind another process, and a step took 10-45 times as long
// (docs/performance.md, "On a busy machine"). Waiting without spinning (OMP_WAIT_POLICY=passive)
// cures that but costs 20 % alone. Running no more threads than there are free CPUs keeps both.
#pragma once

namespace tinyformer {

// The split: N parts (0: as many as cpu_budget() finds). Runs them on N threads, or on as
// many as cpu_budget() finds when N is more, until share_cores says otherwise.
void set_num_threads(int n);
// N.
int num_threads();
// The threads running the parts now, 1..N.
int running_threads();

// Called between the backward's nodes (so at every training step, the trainer's and
// bench's) and between evaluation passes, on the thread that called set_num_threads (on any
// other it does nothing): at most every kShareIntervalSeconds, reads what other processes
// took of this process's CPUs since the last reading (cpu_load.hpp) and sets the running
// threads to the CPUs left, rounded, between 1 and N. A call between readings costs a clock read.
void share_cores();
inline constexpr double kShareIntervalSeconds = 0.1;

// share_cores' rule: the threads to run next, given the CPUs of the mask that other processes
// left free (a reading), the threads running now and the split. Fewer as soon as others hold
// half a CPU of ours; more only when a whole one is free with 0.7 to spare; always 1..split.
int threads_to_run(double free_cpus, int running, int split);

// The running threads forced (tests; 0 hands the choice back to share_cores).
void force_running_threads(int n);

}  // namespace tinyformer
