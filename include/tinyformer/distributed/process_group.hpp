// The processes of one training run and what they exchange, in torch.distributed's words
// (a process group: rank, world size, all_reduce, broadcast, all_gather), over MPI.
//
// A launcher starts the processes: `mpirun -np N tinyformer train ...`, or Slurm's `srun`.
// It tells each process its rank in the environment (launch_from_environment). Started
// without one, the group is this process alone: rank 0 of 1, every exchange does nothing,
// and MPI is never started, so such a run costs and computes exactly what it did before MPI.
//
//   init_process_group();       once, before the first exchange: starts MPI when launched as
//                               one of N > 1 processes; refuses (InputError, exit 2) when this
//                               binary has no MPI, rather than run N copies writing one directory.
//   rank(), world_size()        this process's place
//   all_reduce_sum(x, n)        every process ends with the element-wise sum over all of them
//   start_all_reduce_sum(x, n)  the same, begun now and finished by wait() (MPI_Iallreduce):
//                               the caller computes meanwhile (train/step.cpp's buckets)
//   ...
//   finish_process_group();     once, at the end (MPI_Finalize), on every process's way out;
//   abort_process_group(code);  or instead, when this process fails alone: every process stops.
//
// An exchange is collective: every process must make the same calls in the same order, or
// they wait for each other for ever. The trainer keeps them in step (docs/distributed.md).
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tinyformer {

// What the environment says about the launcher, read before MPI starts.
struct Launch {
    int size = 1;        // processes in the run
    int rank = 0;        // this one's place among them
    int local_size = 1;  // processes on this machine
    std::string by;      // "mpirun", "srun", ...: who set it; empty without a launcher
    std::string variable;  // the variable the size was read from, for messages
};
Launch launch_from_environment();

bool mpi_built_in();       // whether this binary was built with MPI
std::string mpi_library();  // "Open MPI v4.1.4, ..." (the library loaded), or "none (built without MPI)"

void init_process_group();
void finish_process_group();
[[noreturn]] void abort_process_group(int exit_code);

int rank();
int world_size();
bool is_writer();  // rank 0: the one process that writes files and prints the log

void all_reduce_sum(float* values, int64_t count);

// An all_reduce_sum in flight. Until done() or wait() says it has finished, `values` belongs
// to the exchange: neither read nor written. MPI moves it on only inside MPI calls, so a
// caller that computes meanwhile calls done() now and then (between backward nodes).
class PendingSum {
public:
    PendingSum();
    PendingSum(PendingSum&&) noexcept;
    PendingSum& operator=(PendingSum&&) noexcept;
    // Does not wait: one not waited for is on the way to abort_process_group (an exception
    // mid-step), where waiting could hang on a process that has stopped. So `values` must
    // outlive MPI (the gradient arena does: it lives as long as the model).
    ~PendingSum();
    bool done();    // moves it on; true once the sum is in place
    void wait();

    struct Request;  // MPI's request, in the .cpp (no <mpi.h> here)

private:
    friend PendingSum start_all_reduce_sum(float* values, int64_t count);
    Request* request_ = nullptr;
};
// At most INT_MAX elements (one MPI call). Every process must start the same sums in the same
// order, as for every exchange.
PendingSum start_all_reduce_sum(float* values, int64_t count);
void all_reduce_sum(double* values, int64_t count);
void all_reduce_max(int64_t* values, int64_t count);
void broadcast(void* bytes, int64_t count, int root = 0);
// Every process's string, in rank order, on every process.
std::vector<std::string> all_gather(const std::string& mine);

// A failure every process of the group knows of and stops for together, with the same exit
// code: rank 0 prints it; the others stay silent rather than print N copies.
struct GroupFailure : std::runtime_error {
    GroupFailure(int exit_code, const std::string& message) : std::runtime_error(message), exit_code(exit_code) {}
    int exit_code;
};

// Runs `step` on every process; if it throws on any, every process throws GroupFailure with
// the message of the lowest rank that failed ("rank 1: data.path: ...") and that exception's
// exit code (support/errors.hpp's exit_code_of). So a rank that cannot read its data stops
// them all, in step, with one line. Alone, `step`'s exception goes through as it is.
void run_on_every_rank(const std::function<void()>& step);

// Whether `mine` is true on any process (alone: `mine`).
bool any_process(bool mine);

}  // namespace tinyformer
