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

// The watching thread: every SIGINT of the process ends up here, as it is blocked everywhere else.
void wait_for_interrupts(sigset_t sigint, bool ignored_at_start) {
    for (;;) {
        int signal = 0;
        if (sigwait(&sigint, &signal) != 0) continue;
        if (catchers.load() > 0) {
            interrupt_arrived.store(true);
        } else if (!ignored_at_start) {  // nobody catching: the default action, which ends the process
            pthread_sigmask(SIG_UNBLOCK, &sigint, nullptr);
            pthread_kill(pthread_self(), SIGINT);
        }
    }
}

}  // namespace

void watch_interrupts() {
    static std::once_flag once;
    std::call_once(once, [] {
        // An ignored signal is discarded when sent, blocked or not, so it is set to its
        // default action (which, blocked, it never takes) for sigwait to see it.
        const bool ignored_at_start = std::signal(SIGINT, SIG_DFL) == SIG_IGN;
        sigset_t sigint;
        sigemptyset(&sigint);
        sigaddset(&sigint, SIGINT);
        pthread_sigmask(SIG_BLOCK, &sigint, nullptr);
        std::thread(wait_for_interrupts, sigint, ignored_at_start).detach();
    });
}

CatchInterrupts::CatchInterrupts() {
    interrupt_arrived.store(false);
    catchers.fetch_add(1);
}

CatchInterrupts::~CatchInterrupts() { catchers.fetch_sub(1); }

bool CatchInterrupts::requested() const { return interrupt_arrived.load(); }

}  // namespace tinyformer
