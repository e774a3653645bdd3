//! Provider presets: each fills an endpoint's base URL, key variable,
//! protocol, key header and headers for one provider a user may already pay
//! for, or one local server. The settings file names one with `provider`,
//! the command line with `--provider NAME`, the studio's model dialog offers
//! them in a list.

use super::openai::KeyHeader;
use super::wire::Protocol;

/// One provider's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// The name used in settings and on the command line.
    pub name: &'static str,
    /// The name shown.
    pub label: &'static str,
    pub api_base: &'static str,
    /// The environment variable with the key.
    pub api_key_env: &'static str,
    /// Whether a key is needed (local servers take one only if started with
    /// one: it is sent when the variable is set).
    pub key_required: bool,
    pub protocol: Protocol,
    pub key_header: KeyHeader,
    /// Headers sent with every request.
    pub headers: &'static [(&'static str, &'static str)],
    /// The `api-version` query parameter (Azure OpenAI).
    pub api_version: Option<&'static str>,
    /// A model to start from (a deployment's name, for Azure).
    pub model: &'static str,
    /// What the user still has to do.
    pub note: &'static str,
}

/// Every preset, in the order the studio lists them.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "openai",
        label: "OpenAI",
        api_base: "https://api.openai.com/v1",
        api_key_env: "OPENAI_API_KEY",
        key_required: true,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::Bearer,
        headers: &[],
        api_version: None,
        model: "gpt-4.1-mini",
        note: "Key from platform.openai.com in OPENAI_API_KEY.",
    },
    Preset {
        name: "openai-responses",
        label: "OpenAI (Responses API)",
        api_base: "https://api.openai.com/v1",
        api_key_env: "OPENAI_API_KEY",
        key_required: true,
        protocol: Protocol::Responses,
        key_header: KeyHeader::Bearer,
        headers: &[],
        api_version: None,
        model: "o4-mini",
        note: "The Responses API, for reasoning models; key in OPENAI_API_KEY.",
    },
    Preset {
        name: "azure",
        label: "Azure OpenAI",
        api_base: "https://YOUR-RESOURCE.openai.azure.com/openai/deployments/{deployment}",
        api_key_env: "AZURE_OPENAI_API_KEY",
        key_required: true,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::ApiKey,
        headers: &[],
        api_version: Some("2024-10-21"),
        model: "YOUR-DEPLOYMENT",
        note: "Put your resource's name in the URL; the model is your deployment's name.",
    },
    Preset {
        name: "anthropic",
        label: "Anthropic",
        api_base: "https://api.anthropic.com/v1",
        api_key_env: "ANTHROPIC_API_KEY",
        key_required: true,
        protocol: Protocol::AnthropicMessages,
        key_header: KeyHeader::XApiKey,
        headers: &[],
        api_version: None,
        model: "claude-sonnet-4-5",
        note: "Key from console.anthropic.com in ANTHROPIC_API_KEY.",
    },
    Preset {
        name: "gemini",
        label: "Google Gemini",
        api_base: "https://generativelanguage.googleapis.com/v1beta/openai",
        api_key_env: "GEMINI_API_KEY",
        key_required: true,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::Bearer,
        headers: &[],
        api_version: None,
        model: "gemini-2.5-flash",
        note: "Gemini's OpenAI-compatible endpoint; key from aistudio.google.com in GEMINI_API_KEY.",
    },
    Preset {
        name: "openrouter",
        label: "OpenRouter",
        api_base: "https://openrouter.ai/api/v1",
        api_key_env: "OPENROUTER_API_KEY",
        key_required: true,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::Bearer,
        headers: &[("X-Title", "Galapagos Studio")],
        api_version: None,
        model: "openai/gpt-4.1-mini",
        note: "Models as provider/name; X-Title (and HTTP-Referer, if you add one) name the app on openrouter.ai.",
    },
    Preset {
        name: "deepseek",
        label: "DeepSeek",
        api_base: "https://api.deepseek.com/v1",
        api_key_env: "DEEPSEEK_API_KEY",
        key_required: true,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::Bearer,
        headers: &[],
        api_version: None,
        model: "deepseek-chat",
        note: "Key in DEEPSEEK_API_KEY; deepseek-reasoner takes no sampling settings.",
    },
    Preset {
        name: "mistral",
        label: "Mistral",
        api_base: "https://api.mistral.ai/v1",
        api_key_env: "MISTRAL_API_KEY",
        key_required: true,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::Bearer,
        headers: &[],
        api_version: None,
        model: "codestral-latest",
        note: "Key in MISTRAL_API_KEY.",
    },
    Preset {
        name: "groq",
        label: "Groq",
        api_base: "https://api.groq.com/openai/v1",
        api_key_env: "GROQ_API_KEY",
        key_required: true,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::Bearer,
        headers: &[],
        api_version: None,
        model: "llama-3.3-70b-versatile",
        note: "Key in GROQ_API_KEY.",
    },
    Preset {
        name: "together",
        label: "Together AI",
        api_base: "https://api.together.xyz/v1",
        api_key_env: "TOGETHER_API_KEY",
        key_required: true,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::Bearer,
        headers: &[],
        api_version: None,
        model: "Qwen/Qwen2.5-Coder-32B-Instruct",
        note: "Key in TOGETHER_API_KEY.",
    },
    Preset {
        name: "ollama",
        label: "Ollama (local)",
        api_base: "http://localhost:11434/v1",
        api_key_env: "OLLAMA_API_KEY",
        key_required: false,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::Bearer,
        headers: &[],
        api_version: None,
        model: "qwen2.5-coder:7b",
        note: "No key. `ollama pull` the model first.",
    },
    Preset {
        name: "vllm",
        label: "vLLM (local)",
        api_base: "http://localhost:8000/v1",
        api_key_env: "VLLM_API_KEY",
        key_required: false,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::Bearer,
        headers: &[],
        api_version: None,
        model: "Qwen/Qwen2.5-Coder-7B-Instruct",
        note: "No key unless `vllm serve --api-key`; the model is the name it serves.",
    },
    Preset {
        name: "llamacpp",
        label: "llama.cpp server (local)",
        api_base: "http://localhost:8080/v1",
        api_key_env: "LLAMA_API_KEY",
        key_required: false,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::Bearer,
        headers: &[],
        api_version: None,
        model: "local",
        note: "No key unless `llama-server --api-key`; it answers with the model it loaded.",
    },
    Preset {
        name: "lmstudio",
        label: "LM Studio (local)",
        api_base: "http://localhost:1234/v1",
        api_key_env: "LM_STUDIO_API_KEY",
        key_required: false,
        protocol: Protocol::ChatCompletions,
        key_header: KeyHeader::Bearer,
        headers: &[],
        api_version: None,
        model: "qwen2.5-coder-7b-instruct",
        note: "No key; start the server in LM Studio's Developer tab.",
    },
];

/// The preset named `name` (case-insensitive; `llama.cpp` and `lm-studio`
/// spelled either way).
pub fn preset(name: &str) -> Option<&'static Preset> {
    let want: String = name
        .trim()
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !matches!(c, '.' | '_' | ' '))
        .collect();
    let want = want.replace("lm-studio", "lmstudio");
    PRESETS.iter().find(|p| p.name == want)
}

/// The names of every preset, for messages.
pub fn names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::user_settings::EndpointSettings;

    #[test]
    fn every_preset_is_a_valid_endpoint_and_names_are_unique() {
        let mut names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PRESETS.len());
        for p in PRESETS {
            let e = EndpointSettings::of_preset(p);
            assert!(e.validate().is_ok(), "{}: {:?}", p.name, e.validate().err());
            assert_eq!(preset(p.name), Some(p));
        }
        assert_eq!(preset("LLaMA.cpp").map(|p| p.name), Some("llamacpp"));
        assert_eq!(preset("LM Studio").map(|p| p.name), Some("lmstudio"));
        assert_eq!(preset("nope"), None);
    }

    #[test]
    fn presets_fill_only_what_is_unset() {
        let Some(azure) = preset("azure") else {
            panic!("azure preset")
        };
        let e = (EndpointSettings {
            api_base: "https://mine.openai.azure.com/openai/deployments/{deployment}".into(),
            ..EndpointSettings::default()
        })
        .filled_from(azure);
        assert!(e.api_base.starts_with("https://mine."));
        assert_eq!(e.api_key_env, "AZURE_OPENAI_API_KEY");
        assert_eq!(e.key_header, Some(KeyHeader::ApiKey));
        assert_eq!(e.api_version.as_deref(), Some("2024-10-21"));
        let Some(anthropic) = preset("anthropic") else {
            panic!("anthropic preset")
        };
        let e = (EndpointSettings {
            api_key_env: "MY_CLAUDE_KEY".into(),
            ..EndpointSettings::default()
        })
        .filled_from(anthropic);
        assert_eq!(e.api_key_env, "MY_CLAUDE_KEY");
        assert_eq!(e.protocol, Some(Protocol::AnthropicMessages));
        assert_eq!(e.api_base, "https://api.anthropic.com/v1");
    }
}
