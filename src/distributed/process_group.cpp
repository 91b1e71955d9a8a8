// What the process group does the same with MPI or without (see process_group.hpp).
#include "tinyformer/distributed/process_group.hpp"

#include <cstdint>

#include "tinyformer/support/errors.hpp"

namespace tinyformer {

bool is_writer() { return rank() == 0; }

bool any_process(bool mine) {
    if (world_size() == 1) return mine;
    int64_t flag = mine ? 1 : 0;
    all_reduce_max(&flag, 1);
    return flag != 0;
}

void run_on_every_rank(const std::function<void()>& step) {
    if (world_size() == 1) {  // alone: the exception as it is, exactly as without a group
        step();
        return;
    }
    // Each rank's outcome as "" (done) or "<exit code> <message>", seen by every rank.
    std::string outcome;
    try {
        step();
    } catch (const GroupFailure&) {
        throw;  // already shared
    } catch (const std::exception& e) {
        outcome = std::to_string(exit_code_of(e)) + " " + e.what();
    }
    const std::vector<std::string> outcomes = all_gather(outcome);
    for (size_t r = 0; r < outcomes.size(); ++r) {
        if (outcomes[r].empty()) continue;
        const size_t space = outcomes[r].find(' ');
        const int code = std::stoi(outcomes[r].substr(0, space));
        throw GroupFailure(code, "rank " + std::to_string(r) + ": " + outcomes[r].substr(space + 1));
    }
}

}  // namespace tinyformer
