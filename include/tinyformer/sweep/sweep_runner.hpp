// Running a sweep's trainings: each one a child process (`tinyformer train ...`), at most
// `jobs` at once. A process per run keeps the runs apart (each its own threads, buffers and
// backend) and is what --print-commands hands to another scheduler anyway.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace tinyformer {

struct SweepJob {
    std::vector<std::string> argv;  // argv[0] is the program
    std::string log_path;           // the job's stdout and stderr, appended
};

struct SweepJobResult {
    int exit_code = 0;  // as the shell reports it: 128 + N for a child killed by signal N
    double seconds = 0;
};

// Runs every job, at most `parallel` at once, in order; `on_done(i, result)` is called as
// job i ends. Ctrl-C (SIGINT) starts no further job and passes one SIGINT to each running
// one (each in a process group of its own, so a terminal's Ctrl-C reaches them only this
// way), then waits for them: a training saves its checkpoint and exits with 130. Jobs never
// started get exit code -1. Returns whether it was interrupted.
bool run_sweep_jobs(const std::vector<SweepJob>& jobs, int parallel,
                    const std::function<void(size_t, const SweepJobResult&)>& on_done,
                    std::vector<SweepJobResult>& results);

// A command line as a shell reads it back: each argument quoted where it needs to be.
std::string shell_command(const std::vector<std::string>& argv);

}  // namespace tinyformer
