#include "tinyformer/sweep/sweep_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <stdexcept>

#include "tinyformer/support/interrupts.hpp"

extern char** environ;

namespace tinyformer {

namespace {

using Clock = std::chrono::steady_clock;

// Starts one job in a process group of its own, its output appended to its log. Returns its pid.
pid_t spawn(const SweepJob& job) {
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, job.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attributes, 0);  // its own group: the terminal's Ctrl-C is ours to pass on
    sigset_t default_signals;
    sigemptyset(&default_signals);
    sigaddset(&default_signals, SIGINT);
    posix_spawnattr_setsigdefault(&attributes, &default_signals);
    sigset_t no_signals;  // SIGINT is blocked here (watch_interrupts); not in the job
    sigemptyset(&no_signals);
    posix_spawnattr_setsigmask(&attributes, &no_signals);
    std::vector<char*> argv;
    for (const std::string& arg : job.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int error = posix_spawn(&pid, argv[0], &files, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attributes);
    if (error != 0) throw std::runtime_error("cannot start " + job.argv[0] + ": " + std::strerror(error));
    return pid;
}

int exit_code_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

}  // namespace

bool run_sweep_jobs(const std::vector<SweepJob>& jobs, int parallel,
                    const std::function<void(size_t, const SweepJobResult&)>& on_done,
                    std::vector<SweepJobResult>& results) {
    results.assign(jobs.size(), SweepJobResult{-1, 0});
    const CatchInterrupts interrupts;  // Ctrl-C, from the CLI's watch_interrupts (support/interrupts.hpp)

    std::map<pid_t, std::pair<size_t, Clock::time_point>> running;  // pid → (job, start)
    size_t next = 0;
    bool forwarded = false;
    try {
        while (next < jobs.size() || !running.empty()) {
            while (!interrupts.requested() && next < jobs.size() && static_cast<int>(running.size()) < parallel) {
                running.emplace(spawn(jobs[next]), std::make_pair(next, Clock::now()));
                ++next;
            }
            if (interrupts.requested() && !forwarded) {
                for (const auto& [pid, job] : running) kill(pid, SIGINT);
                forwarded = true;
                next = jobs.size();  // start nothing more
            }
            if (running.empty()) break;
            // Polled, not blocking: a Ctrl-C is seen within 50 ms, not after a whole run.
            int status = 0;
            const pid_t pid = waitpid(-1, &status, WNOHANG);
            if (pid == 0 || (pid < 0 && errno == EINTR)) {
                usleep(50 * 1000);
                continue;
            }
            if (pid < 0) throw std::runtime_error(std::string("waiting for the sweep's runs: ") + std::strerror(errno));
            auto found = running.find(pid);
            if (found == running.end()) continue;
            const auto [index, start] = found->second;
            running.erase(found);
            results[index] = {exit_code_of(status), std::chrono::duration<double>(Clock::now() - start).count()};
            on_done(index, results[index]);
        }
    } catch (...) {
        for (const auto& [pid, job] : running) kill(pid, SIGINT);
        for (const auto& [pid, job] : running) waitpid(pid, nullptr, 0);
        throw;
    }
    return interrupts.requested();
}

std::string shell_command(const std::vector<std::string>& argv) {
    std::string line;
    for (const std::string& arg : argv) {
        if (!line.empty()) line += ' ';
        const bool plain = !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                                 "0123456789._-+=/:,@%") == std::string::npos;
        if (plain) {
            line += arg;
            continue;
        }
        line += '\'';
        for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
        line += '\'';
    }
    return line;
}

}  // namespace tinyformer
