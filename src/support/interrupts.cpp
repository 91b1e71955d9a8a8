#include "tinyformer/support/interrupts.hpp"

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <mutex>
#include <thread>

namespace tinyformer {

namespace {

std::atomic<int> catchers{0};              // CatchInterrupts alive
std::atomic<bool> interrupt_arrived{false};  // a Ctrl-C while one was

// The watching thread: every SIGINT (and SIGTERM and SIGUSR1, when watched) of the process ends up here,
// as they are blocked everywhere else.
void wait_for_interrupts(sigset_t watched, bool sigint_ignored_at_start) {
    for (;;) {
        int signal = 0;
        if (sigwait(&watched, &signal) != 0) continue;
        if (catchers.load() > 0) {
            interrupt_arrived.store(true);
        } else if (signal != SIGINT || !sigint_ignored_at_start) {  // nobody catching: the default action, which ends the process
            sigset_t this_one;
            sigemptyset(&this_one);
            sigaddset(&this_one, signal);
            pthread_sigmask(SIG_UNBLOCK, &this_one, nullptr);
            pthread_kill(pthread_self(), signal);
        }
    }
}

}  // namespace

void watch_interrupts(bool launched) {
    static std::once_flag once;
    std::call_once(once, [launched] {
        // An ignored signal is discarded when sent, blocked or not, so it is set to its
        // default action (which, blocked, it never takes) for sigwait to see it.
        const bool ignored_at_start = std::signal(SIGINT, SIG_DFL) == SIG_IGN;
        sigset_t watched;
        sigemptyset(&watched);
        sigaddset(&watched, SIGINT);
        if (launched) {  // what mpirun sends for a Ctrl-C (Open MPI 4), or passes on when asked (any)
            sigaddset(&watched, SIGTERM);
            sigaddset(&watched, SIGUSR1);
        }
        pthread_sigmask(SIG_BLOCK, &watched, nullptr);
        std::thread(wait_for_interrupts, watched, ignored_at_start).detach();
    });
}

void request_interrupt() {
    if (catchers.load() > 0) interrupt_arrived.store(true);
}

CatchInterrupts::CatchInterrupts() {
    interrupt_arrived.store(false);
    catchers.fetch_add(1);
}

CatchInterrupts::~CatchInterrupts() { catchers.fetch_sub(1); }

bool CatchInterrupts::requested() const { return interrupt_arrived.load(); }

}  // namespace tinyformer
