// How fast can random training windows be read from a large file of ids, and what does
// each way leave resident? The microbenchmark behind docs/large-corpora.md's table:
//
//   g++ -O2 -o /tmp/bench_window_reads scripts/bench_window_reads.cpp
//   /tmp/bench_window_reads DIR/train.bin
//
// Reads 20,000 windows of 65 bytes at random offsets each way and prints µs per read.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

namespace {

constexpr int kReads = 20000;
constexpr size_t kWindow = 65;

enum class Release { never, every_256_reads, after_each_read };

double mmap_reads(int fd, size_t length, Release release) {
    auto* bytes = static_cast<unsigned char*>(mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0));
    madvise(bytes, length, MADV_RANDOM);
    madvise(bytes, length, MADV_NOHUGEPAGE);
    std::mt19937_64 offsets(1);
    long checksum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kReads; ++i) {
        const size_t at = offsets() % (length - kWindow);
        for (size_t k = 0; k < kWindow; ++k) checksum += bytes[at + k];
        if (release == Release::every_256_reads && i % 256 == 255) madvise(bytes, length, MADV_DONTNEED);
        if (release == Release::after_each_read) {  // the window and the 64 KB fault-around on each side
            const size_t first = at > 65536 ? (at - 65536) / 4096 * 4096 : 0;
            const size_t end = std::min(length, (at + kWindow + 65536 + 4095) / 4096 * 4096);
            madvise(bytes + first, end - first, MADV_DONTNEED);
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    munmap(bytes, length);
    if (checksum == 42) std::puts("");  // keeps the reads
    return seconds / kReads * 1e6;
}

double pread_reads(int fd, size_t length) {
    std::mt19937_64 offsets(1);
    unsigned char window[kWindow];
    long checksum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kReads; ++i) {
        if (pread(fd, window, kWindow, static_cast<off_t>(offsets() % (length - kWindow))) < 0) return -1;
        checksum += window[0];
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (checksum == 42) std::puts("");
    return seconds / kReads * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s FILE (e.g. a prepared train.bin)\n", argv[0]);
        return 2;
    }
    const int fd = open(argv[1], O_RDONLY);
    struct stat status {};
    if (fd < 0 || fstat(fd, &status) != 0 || static_cast<size_t>(status.st_size) < 1 << 20) {
        std::fprintf(stderr, "%s: cannot open, or smaller than 1 MB\n", argv[1]);
        return 2;
    }
    const size_t length = static_cast<size_t>(status.st_size);
    std::printf("mmap, never let go                %6.1f us/read\n", mmap_reads(fd, length, Release::never));
    std::printf("mmap, let go every 256 reads      %6.1f us/read\n", mmap_reads(fd, length, Release::every_256_reads));
    std::printf("mmap, let go after each read      %6.1f us/read\n", mmap_reads(fd, length, Release::after_each_read));
    std::printf("pread                             %6.1f us/read\n", pread_reads(fd, length));
    return 0;
}
