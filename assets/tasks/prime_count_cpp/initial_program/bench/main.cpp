// The benchmark: for every n given on the command line, print
// "n count_primes(n)" on a line of its own. The evaluator builds this file
// from the task folder (not the candidate's copy) with the candidate's
// src/*.cpp, times the whole run, and checks every count.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "primes.hpp"

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        char* end = nullptr;
        const unsigned long long n = std::strtoull(argv[i], &end, 10);
        if (end == argv[i] || *end != '\0') {
            std::fprintf(stderr, "not a number: %s\n", argv[i]);
            return 2;
        }
        const std::uint64_t count = count_primes(static_cast<std::uint64_t>(n));
        std::printf("%llu %llu\n", n, static_cast<unsigned long long>(count));
    }
    return 0;
}
