// A hash that spreads 64-bit keys over 1024 buckets.
//
// The evaluator compiles this file with rustc, writes the keys to its stdin
// (one per line) and reads one bucket (0 to 1023) per line back.
use std::io::{self, BufRead, BufWriter, Write};

// EVOLVE-BLOCK-START
const MULTIPLIER: u64 = 31;
const SHIFT: u32 = 4;

fn bucket(key: u64) -> u64 {
    (key.wrapping_mul(MULTIPLIER) >> SHIFT) % 1024
}
// EVOLVE-BLOCK-END

fn main() {
    let stdin = io::stdin();
    let mut out = BufWriter::new(io::stdout().lock());
    for line in stdin.lock().lines() {
        let key: u64 = line.expect("a line").trim().parse().expect("a u64 key");
        writeln!(out, "{}", bucket(key)).expect("stdout");
    }
}
