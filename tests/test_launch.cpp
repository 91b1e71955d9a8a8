// Who started this process (distributed/process_group.hpp's launch_from_environment): mpirun,
// Slurm's srun or a PMI launcher, each read from its own variables; an sbatch script's own
// shell is no launch of several; a value that is no count is refused, naming the variable.
// And alone, the process group is this process: rank 0 of 1, exchanges leave values as they are.
#include <cstdlib>
#include <string>
#include <vector>

#include "catch.hpp"
#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/support/errors.hpp"

using namespace tinyformer;

namespace {

using Variables = std::vector<std::pair<std::string, std::string>>;

// Sets the given variables for its lifetime, with every launcher variable cleared first.
class LaunchEnvironment {
public:
    explicit LaunchEnvironment(const Variables& variables) {
        for (const char* name : kNames) {
            if (const char* value = std::getenv(name)) saved_.emplace_back(name, value);
            unsetenv(name);
        }
        for (const auto& [name, value] : variables) setenv(name.c_str(), value.c_str(), 1);
    }
    ~LaunchEnvironment() {
        for (const char* name : kNames) unsetenv(name);
        for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
    }

private:
    static constexpr const char* kNames[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                             "SLURM_STEP_NUM_TASKS", "SLURM_STEP_ID", "SLURM_PROCID",
                                             "PMI_SIZE", "PMI_RANK"};
    std::vector<std::pair<std::string, std::string>> saved_;
};

}  // namespace

TEST_CASE("launch_from_environment reads mpirun's, srun's and PMI's variables", "[distributed]") {
    {
        const LaunchEnvironment none(Variables{});
        const Launch launch = launch_from_environment();
        CHECK(launch.size == 1);
        CHECK(launch.rank == 0);
        CHECK(launch.by.empty());
    }
    {
        const LaunchEnvironment mpirun(Variables{{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "3"},
                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
        const Launch launch = launch_from_environment();
        CHECK(launch.size == 4);
        CHECK(launch.rank == 3);
        CHECK(launch.local_size == 2);
        CHECK(launch.by == "mpirun");
    }
    {
        const LaunchEnvironment srun(Variables{{"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "5"}});
        const Launch launch = launch_from_environment();
        CHECK(launch.size == 8);
        CHECK(launch.rank == 5);
        CHECK(launch.by == "srun");
    }
    {  // an sbatch script's shell has a job's task count but is no step of srun's
        const LaunchEnvironment batch_shell(Variables{{"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_PROCID", "0"}});
        CHECK(launch_from_environment().size == 1);
    }
    {
        const LaunchEnvironment hydra(Variables{{"PMI_SIZE", "3"}, {"PMI_RANK", "1"}});
        const Launch launch = launch_from_environment();
        CHECK(launch.size == 3);
        CHECK(launch.rank == 1);
    }
}

TEST_CASE("launch_from_environment refuses what is no count or no rank, naming the variable", "[distributed]") {
    {
        const LaunchEnvironment bad(Variables{{"OMPI_COMM_WORLD_SIZE", "two"}});
        CHECK_THROWS_WITH(launch_from_environment(), ContainsSubstring("OMPI_COMM_WORLD_SIZE=\"two\""));
    }
    {
        const LaunchEnvironment outside(Variables{{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "2"}});
        CHECK_THROWS_AS(launch_from_environment(), InputError);
    }
}

TEST_CASE("alone, the process group is this process and its exchanges change nothing", "[distributed]") {
    const LaunchEnvironment none(Variables{});
    init_process_group();
    CHECK(rank() == 0);
    CHECK(world_size() == 1);
    CHECK(is_writer());
    std::vector<float> values = {1.5f, -2.0f};
    all_reduce_sum(values.data(), 2);
    CHECK(values == std::vector<float>{1.5f, -2.0f});
    CHECK(all_gather("mine") == std::vector<std::string>{"mine"});
    CHECK(any_process(true));
    CHECK_FALSE(any_process(false));
    // A failure goes through as it was thrown, its type and its words.
    CHECK_THROWS_AS(run_on_every_rank([] { throw InputError("data.path: missing"); }), InputError);
}
