// The process group over MPI (a binary built with MPI: CMake found libopenmpi-dev). MPI is
// started only when a launcher started this process as one of several; alone, every
// exchange returns at once and MPI's library is never initialised.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/support/errors.hpp"

namespace tinyformer {

namespace {

bool started = false;  // MPI_Init ran (and MPI_Finalize has not)
int group_rank = 0, group_size = 1;

// MPI counts are ints: larger exchanges go in pieces of at most INT_MAX elements.
template <typename Piece>
void in_pieces(int64_t count, Piece piece) {
    for (int64_t done = 0; done < count;) {
        const int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
        piece(done, n);
        done += n;
    }
}

}  // namespace

bool mpi_built_in() { return true; }

std::string mpi_library() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(text, &length);  // allowed before MPI_Init
    std::string version(text, static_cast<size_t>(length));
    if (const size_t end = version.find_first_of(",\n"); end != std::string::npos) version.resize(end);
    return version;
}

void init_process_group() {
    if (started) return;
    const Launch launch = launch_from_environment();
    if (launch.size <= 1) return;  // alone: no MPI at all
    // The buckets' sums (start_all_reduce_sum) are Open MPI's libnbc iallreduce, whose own
    // choice for two processes halves its speed across a network (docs/distributed.md):
    // the ring, as NCCL and Gloo sum, unless the user chose (their variable is kept).
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "ring", /*overwrite=*/0);
    int provided = 0;
    // Only the main thread calls MPI; the OpenMP threads never do (FUNNELED).
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    started = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &group_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &group_size);
    if (group_size != launch.size) {
        const std::string message = launch.variable + "=" + std::to_string(launch.size) + ", but MPI found " +
                                    std::to_string(group_size) + " processes: start tinyformer with mpirun or srun";
        throw InputError(message);
    }
}

void finish_process_group() {
    if (!started) return;
    MPI_Finalize();
    started = false;
}

void abort_process_group(int exit_code) {
    if (started) MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::exit(exit_code);
}

int rank() { return group_rank; }
int world_size() { return group_size; }

// Every process's `count` elements of `type` combined by `op`, in place, on every process.
static void all_reduce(void* values, int64_t count, MPI_Datatype type, size_t element_bytes, MPI_Op op) {
    if (group_size == 1) return;
    in_pieces(count, [&](int64_t at, int n) {
        MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(values) + at * static_cast<int64_t>(element_bytes), n, type, op,
                      MPI_COMM_WORLD);
    });
}

void all_reduce_sum(float* values, int64_t count) { all_reduce(values, count, MPI_FLOAT, sizeof(float), MPI_SUM); }
void all_reduce_sum(double* values, int64_t count) { all_reduce(values, count, MPI_DOUBLE, sizeof(double), MPI_SUM); }
struct PendingSum::Request {
    MPI_Request request = MPI_REQUEST_NULL;
};

PendingSum::PendingSum() = default;
PendingSum::PendingSum(PendingSum&& other) noexcept : request_(other.request_) { other.request_ = nullptr; }
PendingSum& PendingSum::operator=(PendingSum&& other) noexcept {
    if (this != &other) {
        delete request_;  // as the destructor: left to MPI, not waited for
        request_ = other.request_;
        other.request_ = nullptr;
    }
    return *this;
}
PendingSum::~PendingSum() { delete request_; }

bool PendingSum::done() {
    if (!request_) return true;
    int finished = 0;
    MPI_Test(&request_->request, &finished, MPI_STATUS_IGNORE);
    if (!finished) return false;
    delete request_;
    request_ = nullptr;
    return true;
}

void PendingSum::wait() {
    if (!request_) return;
    MPI_Wait(&request_->request, MPI_STATUS_IGNORE);
    delete request_;
    request_ = nullptr;
}

PendingSum start_all_reduce_sum(float* values, int64_t count) {
    PendingSum pending;
    if (group_size == 1) return pending;
    if (count > INT_MAX) throw std::invalid_argument("start_all_reduce_sum: more than INT_MAX elements at once");
    pending.request_ = new PendingSum::Request;
    MPI_Iallreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                   &pending.request_->request);
    return pending;
}

void all_reduce_max(int64_t* values, int64_t count) {
    all_reduce(values, count, MPI_INT64_T, sizeof(int64_t), MPI_MAX);
}

void broadcast(void* bytes, int64_t count, int root) {
    if (group_size == 1) return;
    in_pieces(count, [&](int64_t at, int n) {
        MPI_Bcast(static_cast<char*>(bytes) + at, n, MPI_BYTE, root, MPI_COMM_WORLD);
    });
}

std::vector<std::string> all_gather(const std::string& mine) {
    if (group_size == 1) return {mine};
    if (mine.size() > INT_MAX) throw std::runtime_error("all_gather: a string over 2 GiB");
    const int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<size_t>(group_size)), offsets(static_cast<size_t>(group_size));
    MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int64_t total = 0;
    for (int r = 0; r < group_size; ++r) {
        offsets[r] = static_cast<int>(total);
        total += lengths[r];
    }
    if (total > INT_MAX) throw std::runtime_error("all_gather: over 2 GiB in all");
    std::string all(static_cast<size_t>(total), '\0');
    MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                   MPI_COMM_WORLD);
    std::vector<std::string> each;
    for (int r = 0; r < group_size; ++r) each.push_back(all.substr(offsets[r], lengths[r]));
    return each;
}

}  // namespace tinyformer
