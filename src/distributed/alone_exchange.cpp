// The process group of a binary built without MPI: always this process alone. Started by a
// launcher as one of several, it refuses to run rather than let N copies write one run.
#include <cstdlib>
#include <string>

#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/support/errors.hpp"

namespace tinyformer {

bool mpi_built_in() { return false; }
std::string mpi_library() { return "none (built without MPI: install libopenmpi-dev and rebuild)"; }

void init_process_group() {
    const Launch launch = launch_from_environment();
    if (launch.size > 1)
        throw InputError("started by " + launch.by + " as one of " + std::to_string(launch.size) + " processes (" +
                         launch.variable + "), but this tinyformer was built without MPI: install libopenmpi-dev "
                         "and rebuild (scripts/install-deps.sh), or run it without " + launch.by);
}

void finish_process_group() {}
void abort_process_group(int exit_code) { std::exit(exit_code); }

int rank() { return 0; }
int world_size() { return 1; }

void all_reduce_sum(float*, int64_t) {}
void all_reduce_sum(double*, int64_t) {}

// Alone, a sum of one process is already in place: nothing is ever in flight.
struct PendingSum::Request {};
PendingSum::PendingSum() = default;
PendingSum::PendingSum(PendingSum&&) noexcept = default;
PendingSum& PendingSum::operator=(PendingSum&&) noexcept = default;
PendingSum::~PendingSum() = default;
bool PendingSum::done() { return request_ == nullptr; }  // always: nothing is ever started
void PendingSum::wait() {}
PendingSum start_all_reduce_sum(float*, int64_t) { return {}; }
void all_reduce_max(int64_t*, int64_t) {}
void broadcast(void*, int64_t, int) {}
std::vector<std::string> all_gather(const std::string& mine) { return {mine}; }

}  // namespace tinyformer
