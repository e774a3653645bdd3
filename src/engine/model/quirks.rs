//! What each model accepts: a table of model families whose requests differ
//! (reasoning models take no `temperature` or `top_p` and want
//! `max_completion_tokens`; Anthropic's newer models refuse `temperature`
//! together with `top_p`), and reading a 400 that names a parameter the
//! model does not take, so the client can drop it and go on.

use std::collections::BTreeSet;

use super::wire::{ApiError, Protocol, Sampling, TokenLimitKey};

/// A request parameter the client may leave out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Param {
    Temperature,
    TopP,
    /// The completion token limit, left out altogether.
    MaxTokens,
    /// `max_tokens` refused in favour of `max_completion_tokens`: the limit is
    /// sent under the new key instead.
    MaxTokensKey,
    ReasoningEffort,
}

impl Param {
    /// How the parameter is named on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Param::Temperature => "temperature",
            Param::TopP => "top_p",
            Param::MaxTokens => "max_tokens",
            Param::MaxTokensKey => "max_tokens (as max_completion_tokens)",
            Param::ReasoningEffort => "reasoning_effort",
        }
    }

    /// What the client does about it, for the warning.
    pub fn remedy(self) -> &'static str {
        match self {
            Param::MaxTokensKey => "sending the limit as max_completion_tokens",
            _ => "leaving it out",
        }
    }
}

/// What a model family takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// A reasoning model: no `temperature` / `top_p`, the limit as
    /// `max_completion_tokens`, `reasoning_effort` sent when set.
    pub reasoning: bool,
    /// Takes no sampling settings at all (DeepSeek's reasoner ignores them).
    pub no_sampling: bool,
    /// Refuses `temperature` together with `top_p` (Anthropic): `top_p` is
    /// left out when both are set.
    pub one_of_temperature_top_p: bool,
}

const REASONING: Capabilities = Capabilities {
    reasoning: true,
    no_sampling: true,
    one_of_temperature_top_p: false,
};

/// Model families by name prefix (after any `provider/` prefix), first match
/// wins.
const TABLE: &[(&str, Capabilities)] = &[
    // Chat variants of the GPT-5 family are ordinary chat models.
    (
        "gpt-5-chat",
        Capabilities {
            reasoning: false,
            no_sampling: false,
            one_of_temperature_top_p: false,
        },
    ),
    ("gpt-5", REASONING),
    ("o1", REASONING),
    ("o3", REASONING),
    ("o4", REASONING),
    (
        "deepseek-reasoner",
        Capabilities {
            reasoning: false,
            no_sampling: true,
            one_of_temperature_top_p: false,
        },
    ),
    (
        "claude",
        Capabilities {
            reasoning: false,
            no_sampling: false,
            one_of_temperature_top_p: true,
        },
    ),
];

/// What `model` takes when spoken to in `protocol`.
pub fn capabilities(model: &str, protocol: Protocol) -> Capabilities {
    let short = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let mut caps = TABLE
        .iter()
        .find(|(prefix, _)| short.starts_with(prefix))
        .map(|(_, c)| *c)
        .unwrap_or_default();
    if protocol == Protocol::AnthropicMessages {
        caps.one_of_temperature_top_p = true;
    }
    caps
}

/// The sampling settings to send: the configured ones, shaped by the model's
/// capabilities, less what the server refused earlier in the run.
pub fn sampling(configured: &Sampling, caps: Capabilities, refused: &BTreeSet<Param>) -> Sampling {
    let mut s = configured.clone();
    if caps.no_sampling {
        s.temperature = None;
        s.top_p = None;
    }
    if caps.reasoning {
        s.token_limit_key = TokenLimitKey::MaxCompletionTokens;
    }
    if caps.one_of_temperature_top_p && s.temperature.is_some() {
        s.top_p = None;
    }
    for p in refused {
        match p {
            Param::Temperature => s.temperature = None,
            Param::TopP => s.top_p = None,
            Param::MaxTokens => s.max_tokens = None,
            Param::MaxTokensKey => s.token_limit_key = TokenLimitKey::MaxCompletionTokens,
            Param::ReasoningEffort => s.reasoning_effort = None,
        }
    }
    s
}

/// The parameter a 400 reply refuses, when it names one that was sent: by
/// its `param` field (OpenAI), else by its message ("`temperature` and
/// `top_p` cannot both be specified for this model").
pub fn refused_param(error: &ApiError, sent: &Sampling) -> Option<Param> {
    let param = error.param.to_ascii_lowercase();
    let message = error.message.to_ascii_lowercase();
    let names = |p: &str| param == p || param.ends_with(&format!(".{p}")) || message.contains(p);
    if sent.max_tokens.is_some()
        && sent.token_limit_key == TokenLimitKey::MaxTokens
        && names("max_tokens")
        && message.contains("max_completion_tokens")
    {
        return Some(Param::MaxTokensKey);
    }
    // Both named: the server wants one of them; keep the temperature.
    if sent.temperature.is_some() && sent.top_p.is_some() && names("temperature") && names("top_p")
    {
        return Some(Param::TopP);
    }
    let candidates = [
        (
            Param::Temperature,
            "temperature",
            sent.temperature.is_some(),
        ),
        (Param::TopP, "top_p", sent.top_p.is_some()),
        (
            Param::ReasoningEffort,
            "reasoning_effort",
            sent.reasoning_effort.is_some(),
        ),
        (
            Param::ReasoningEffort,
            "effort",
            sent.reasoning_effort.is_some(),
        ),
        (
            Param::MaxTokens,
            match sent.token_limit_key {
                TokenLimitKey::MaxTokens => "max_tokens",
                TokenLimitKey::MaxCompletionTokens => "max_completion_tokens",
            },
            sent.max_tokens.is_some(),
        ),
    ];
    candidates
        .into_iter()
        .find(|(_, name, was_sent)| *was_sent && names(name))
        .map(|(p, _, _)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent() -> Sampling {
        Sampling {
            temperature: Some(0.7),
            top_p: Some(0.9),
            max_tokens: Some(100),
            ..Sampling::default()
        }
    }

    #[test]
    fn the_table_shapes_requests() {
        let none = BTreeSet::new();
        let s = sampling(
            &sent(),
            capabilities("o3-mini", Protocol::ChatCompletions),
            &none,
        );
        assert_eq!((s.temperature, s.top_p), (None, None));
        assert_eq!(s.token_limit_key, TokenLimitKey::MaxCompletionTokens);
        let s = sampling(
            &sent(),
            capabilities("openai/gpt-5", Protocol::ChatCompletions),
            &none,
        );
        assert_eq!(s.temperature, None);
        let s = sampling(
            &sent(),
            capabilities("gpt-5-chat-latest", Protocol::ChatCompletions),
            &none,
        );
        assert_eq!(s.temperature, Some(0.7));
        let s = sampling(
            &sent(),
            capabilities("gpt-4o", Protocol::ChatCompletions),
            &none,
        );
        assert_eq!(s, sent());
        let s = sampling(
            &sent(),
            capabilities("anything", Protocol::AnthropicMessages),
            &none,
        );
        assert_eq!((s.temperature, s.top_p), (Some(0.7), None));
        let only_p = Sampling {
            temperature: None,
            ..sent()
        };
        let s = sampling(
            &only_p,
            capabilities("claude-opus-4-1", Protocol::AnthropicMessages),
            &none,
        );
        assert_eq!(s.top_p, Some(0.9));
        let refused: BTreeSet<Param> = [Param::Temperature, Param::MaxTokensKey].into();
        let s = sampling(
            &sent(),
            capabilities("gpt-4o", Protocol::ChatCompletions),
            &refused,
        );
        assert_eq!(s.temperature, None);
        assert_eq!(s.token_limit_key, TokenLimitKey::MaxCompletionTokens);
    }

    #[test]
    fn refusals_are_read_from_param_or_message() {
        let e = |param: &str, message: &str| ApiError {
            param: param.into(),
            message: message.into(),
            ..ApiError::default()
        };
        let s = sent();
        assert_eq!(
            refused_param(
                &e(
                    "temperature",
                    "Unsupported value: 'temperature' does not support 0.7 with this model. Only the default (1) value is supported."
                ),
                &s
            ),
            Some(Param::Temperature)
        );
        assert_eq!(
            refused_param(
                &e(
                    "",
                    "`temperature` and `top_p` cannot both be specified for this model. Please use only one."
                ),
                &s
            ),
            Some(Param::TopP)
        );
        assert_eq!(
            refused_param(
                &e(
                    "max_tokens",
                    "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
                ),
                &s
            ),
            Some(Param::MaxTokensKey)
        );
        assert_eq!(
            refused_param(
                &e("reasoning.effort", "Unsupported parameter"),
                &Sampling {
                    reasoning_effort: Some("low".into()),
                    ..s.clone()
                }
            ),
            Some(Param::ReasoningEffort)
        );
        // A parameter that was not sent is not "refused".
        let no_t = Sampling {
            temperature: None,
            ..s.clone()
        };
        assert_eq!(refused_param(&e("temperature", "no"), &no_t), None);
        assert_eq!(refused_param(&e("", "prompt is too long"), &s), None);
    }
}
