// Who started this process, and as which of how many (see process_group.hpp).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "tinyformer/distributed/process_group.hpp"
#include "tinyformer/support/errors.hpp"

namespace tinyformer {

namespace {

// The variable's value as a count ≥ 0, or -1 when it is not set; a value that is no number
// is an error naming the variable: a launcher's process must not guess its place.
int count_from(const char* name) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return -1;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end != '\0' || value < 0 || value > 1'000'000)
        throw InputError(std::string(name) + "=\"" + text + "\": expected a process count or rank");
    return static_cast<int>(value);
}

}  // namespace

Launch launch_from_environment() {
    Launch launch;
    // Open MPI's mpirun (4.x and 5.x) names the size, the rank and the processes on this machine.
    if (const int size = count_from("OMPI_COMM_WORLD_SIZE"); size >= 1) {
        launch = {size, std::max(0, count_from("OMPI_COMM_WORLD_RANK")),
                  std::max(1, count_from("OMPI_COMM_WORLD_LOCAL_SIZE")), "mpirun", "OMPI_COMM_WORLD_SIZE"};
    } else if (const int step_tasks = count_from("SLURM_STEP_NUM_TASKS");
               step_tasks >= 1 && std::getenv("SLURM_STEP_ID") != nullptr) {
        // Slurm's srun: a job step's tasks (an sbatch script's own shell is no step of srun's).
        launch = {step_tasks, std::max(0, count_from("SLURM_PROCID")), 1, "srun", "SLURM_STEP_NUM_TASKS"};
    } else if (const int pmi_size = count_from("PMI_SIZE"); pmi_size >= 1) {  // other PMI launchers (hydra)
        launch = {pmi_size, std::max(0, count_from("PMI_RANK")), 1, "a PMI launcher", "PMI_SIZE"};
    }
    if (launch.rank >= launch.size)
        throw InputError(launch.variable + "=" + std::to_string(launch.size) + " but this process's rank is " +
                         std::to_string(launch.rank) + ": expected a rank below the size");
    return launch;
}

}  // namespace tinyformer
