//! Token prices: an optional table of USD per one million tokens per model
//! name, turning a reply's token counts into `TokenUsage::cost_usd`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::engine::usage::TokenUsage;

/// The price of one model, in USD per one million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// USD per 1M prompt (input) tokens.
    pub prompt_per_million: f64,
    /// USD per 1M completion (output) tokens; reasoning tokens are output
    /// tokens and cost this too.
    pub completion_per_million: f64,
    /// USD per 1M input tokens read from the provider's prompt cache
    /// (unset: the prompt price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_per_million: Option<f64>,
    /// USD per 1M input tokens written to the prompt cache (Anthropic
    /// charges 1.25 times the input price for a 5-minute entry; unset: the
    /// prompt price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_million: Option<f64>,
}

impl Price {
    /// A price from the two per-million rates.
    pub fn new(prompt_per_million: f64, completion_per_million: f64) -> Self {
        Self {
            prompt_per_million,
            completion_per_million,
            cached_per_million: None,
            cache_write_per_million: None,
        }
    }

    /// This price with the prompt cache's read and write rates.
    #[must_use]
    pub fn with_cache(mut self, read_per_million: f64, write_per_million: f64) -> Self {
        self.cached_per_million = Some(read_per_million);
        self.cache_write_per_million = Some(write_per_million);
        self
    }

    /// Cost in USD of one reply's `usage`: uncached input at the prompt
    /// price, cache reads and writes at theirs, output (reasoning included)
    /// at the completion price.
    pub fn cost_of(&self, usage: &TokenUsage) -> f64 {
        let read = usage.cached_tokens.min(usage.prompt_tokens);
        let write = usage.cache_write_tokens.min(usage.prompt_tokens - read);
        let plain = usage.prompt_tokens - read - write;
        // Token counts stay far below 2^53, so the conversions are exact.
        (plain as f64 * self.prompt_per_million
            + read as f64 * self.cached_per_million.unwrap_or(self.prompt_per_million)
            + write as f64
                * self
                    .cache_write_per_million
                    .unwrap_or(self.prompt_per_million)
            + usage.completion_tokens as f64 * self.completion_per_million)
            / 1_000_000.0
    }

    /// Cost in USD of `prompt_tokens` + `completion_tokens`.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        // Token counts stay far below 2^53, so the conversion is exact.
        (prompt_tokens as f64 * self.prompt_per_million
            + completion_tokens as f64 * self.completion_per_million)
            / 1_000_000.0
    }

    /// Checks that both rates are finite and not negative.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (what, v) in [
            ("prompt_per_million", self.prompt_per_million),
            ("completion_per_million", self.completion_per_million),
            (
                "cached_per_million",
                self.cached_per_million.unwrap_or_default(),
            ),
            (
                "cache_write_per_million",
                self.cache_write_per_million.unwrap_or_default(),
            ),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(ConfigError::invalid(format!(
                    "price {what} must be a finite number >= 0, got {v}"
                )));
            }
        }
        Ok(())
    }
}

/// Prices by model name. A model missing from the table has no known cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PriceTable {
    /// Model name → price.
    pub prices: BTreeMap<String, Price>,
}

impl PriceTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces the price of `model`.
    pub fn insert(&mut self, model: &str, price: Price) {
        self.prices.insert(model.to_owned(), price);
    }

    /// True when no price is known.
    pub fn is_empty(&self) -> bool {
        self.prices.is_empty()
    }

    /// The price of `model`: an exact name match first, then the name after a
    /// provider prefix (`openai/gpt-4o` → `gpt-4o`, as routers spell names).
    pub fn lookup(&self, model: &str) -> Option<Price> {
        if let Some(p) = self.prices.get(model) {
            return Some(*p);
        }
        let (_, short) = model.rsplit_once('/')?;
        self.prices.get(short).copied()
    }

    /// Token usage for `model` with the cost filled in when a price is known.
    pub fn usage(&self, model: &str, prompt_tokens: u64, completion_tokens: u64) -> TokenUsage {
        TokenUsage {
            prompt_tokens,
            completion_tokens,
            cost_usd: self
                .lookup(model)
                .map(|p| p.cost(prompt_tokens, completion_tokens)),
            ..TokenUsage::default()
        }
    }

    /// Checks every price (finite, not negative) and every name (not empty).
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, price) in &self.prices {
            if name.trim().is_empty() {
                return Err(ConfigError::invalid("price table has an empty model name"));
            }
            price
                .validate()
                .map_err(|e| e.within(format!("price of model `{name}`")))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_per_million_tokens() {
        let p = Price::new(2.5, 10.0);
        let c = p.cost(1_000_000, 500_000);
        assert!((c - 7.5).abs() < 1e-12, "{c}");
        assert_eq!(p.cost(0, 0), 0.0);
    }

    #[test]
    fn cache_reads_writes_and_reasoning_are_priced() {
        // Anthropic's shape: $3 input, $0.30 cache read, $3.75 cache write, $15 output.
        let p = Price::new(3.0, 15.0).with_cache(0.3, 3.75);
        let u = TokenUsage {
            prompt_tokens: 1_000_000,
            completion_tokens: 100_000,
            cached_tokens: 600_000,
            cache_write_tokens: 300_000,
            reasoning_tokens: 40_000,
            ..TokenUsage::default()
        };
        // 100k plain * 3 + 600k * 0.3 + 300k * 3.75 + 100k * 15, per million.
        let c = p.cost_of(&u);
        assert!((c - (0.3 + 0.18 + 1.125 + 1.5)).abs() < 1e-12, "{c}");
        // Without cache rates, cached tokens cost the prompt price.
        let plain = Price::new(3.0, 15.0);
        assert!((plain.cost_of(&u) - plain.cost(1_000_000, 100_000)).abs() < 1e-12);
        // Inconsistent counts never go negative.
        let odd = TokenUsage {
            prompt_tokens: 10,
            cached_tokens: 50,
            cache_write_tokens: 50,
            ..TokenUsage::default()
        };
        assert!((p.cost_of(&odd) - 10.0 * 0.3 / 1e6).abs() < 1e-15);
    }

    #[test]
    fn lookup_exact_then_provider_prefix() {
        let mut t = PriceTable::new();
        t.insert("gpt-4o", Price::new(2.5, 10.0));
        t.insert("openai/gpt-4o", Price::new(3.0, 12.0));
        assert_eq!(t.lookup("gpt-4o"), Some(Price::new(2.5, 10.0)));
        assert_eq!(t.lookup("openai/gpt-4o"), Some(Price::new(3.0, 12.0)));
        assert_eq!(t.lookup("azure/gpt-4o"), Some(Price::new(2.5, 10.0)));
        assert_eq!(t.lookup("llama3"), None);
        let u = t.usage("llama3", 10, 20);
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.cost_usd),
            (10, 20, None)
        );
        let u = t.usage("gpt-4o", 1000, 100);
        let cost = u.cost_usd.unwrap_or(f64::NAN);
        assert!((cost - (0.0025 + 0.001)).abs() < 1e-12, "{cost}");
    }

    #[test]
    fn validation_rejects_negative_and_nan() {
        let mut t = PriceTable::new();
        t.insert("a", Price::new(1.0, 2.0));
        assert!(t.validate().is_ok());
        t.insert("b", Price::new(-1.0, 2.0));
        let err = t
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("`b`") && err.contains("prompt_per_million"),
            "{err}"
        );
        let mut t = PriceTable::new();
        t.insert("c", Price::new(1.0, f64::NAN));
        assert!(t.validate().is_err());
    }

    #[test]
    fn table_serialises_as_a_plain_map() {
        let mut t = PriceTable::new();
        t.insert("m", Price::new(0.5, 1.5));
        let json = serde_json::to_string(&t).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"m":{"prompt_per_million":0.5,"completion_per_million":1.5}}"#
        );
        let back: PriceTable = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, t);
    }
}
