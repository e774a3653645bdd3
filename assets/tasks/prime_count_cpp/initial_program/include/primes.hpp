// The library's interface. The benchmark (bench/main.cpp) calls
// count_primes; count_primes may use is_prime or not.
#pragma once

#include <cstdint>

// Whether n is a prime number.
bool is_prime(std::uint64_t n);

// How many primes p there are with 2 <= p <= n.
std::uint64_t count_primes(std::uint64_t n);
