#include "primes.hpp"

// EVOLVE-BLOCK-START
// Trial division by every odd number up to the square root.
bool is_prime(std::uint64_t n) {
    if (n < 2) {
        return false;
    }
    if (n % 2 == 0) {
        return n == 2;
    }
    for (std::uint64_t d = 3; d * d <= n; d += 2) {
        if (n % d == 0) {
            return false;
        }
    }
    return true;
}
// EVOLVE-BLOCK-END
