#include "primes.hpp"

// EVOLVE-BLOCK-START
// One primality test per number.
std::uint64_t count_primes(std::uint64_t n) {
    std::uint64_t count = 0;
    for (std::uint64_t k = 2; k <= n; ++k) {
        if (is_prime(k)) {
            ++count;
        }
    }
    return count;
}
// EVOLVE-BLOCK-END
