//! The run's one source of randomness.
//!
//! Every random choice in a run (selection, inspirations, model choice,
//! template variation, the offline model) draws from one generator seeded by
//! the card's `seed`, so the same card + seed + model responses give the same
//! run. The generator is serialisable so a checkpoint can store its state.

use rand::SeedableRng as _;

/// The generator type used by the engine (xoshiro256++, serialisable).
pub type SearchRng = rand::rngs::Xoshiro256PlusPlus;

/// A generator seeded from a card seed.
pub fn seeded(seed: u64) -> SearchRng {
    SearchRng::seed_from_u64(seed)
}
