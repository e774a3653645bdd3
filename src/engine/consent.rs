//! Consent to lowered isolation: a card from elsewhere that lowers any
//! setting below the sandbox's safe defaults runs only with the person's
//! explicit consent, given for that card and naming each lowered setting.
//!
//! # The rule
//!
//! A run's card has a provenance ([`crate::engine::provenance`]) and a list
//! of lowered settings ([`crate::engine::sandbox::lowered::lowered`]). Then:
//! - **nothing lowered**: the run goes;
//! - **a card from elsewhere** (pulled from a hub, imported from a bundle,
//!   read from a run folder this account did not sign) that lowers anything
//!   runs only with a [`Consent`] for its hash ([`crate::engine::card::Card::hash`])
//!   that names every lowered setting; without one nothing runs, and the
//!   refusal ([`ConsentNeeded`]) lists what the card asks for and how to
//!   allow it;
//! - **the user's own card, or a built-in one**, may lower isolation: the run
//!   says what is lowered once, at its start, and records it;
//! - **as root**, a setting that runs processes with no sandbox (they would
//!   run as root) needs the consent even in the user's own card.
//!
//! A consent is for one card: its hash covers everything in the card but
//! its provenance and the three settings every front end sets per run
//! (`general.max_iterations`, `general.parallel`, `seed`), so a consent to a
//! card is not one to a changed card (another hash), and naming the settings
//! keeps a person from allowing more than they read. The command line gives
//! it with `--consent HASH --allow SETTING,...`; the studio asks in a dialog
//! that lists each setting, with buttons to allow them for this card or to
//! cancel.
//!
//! # Why
//!
//! The sandbox is what makes running a stranger's search method safe: the
//! candidates are code a model wrote, and the evaluator command, the agent
//! and their settings come from whoever wrote the card. A card that switches
//! the sandbox off, opens the network or shows `~/.ssh` turns "try this
//! card" into "run this on my machine", so the person must say so, for
//! that card, knowing what it asks. The user's own card is theirs to
//! configure (they wrote the setting; a consent would only teach them to
//! click through), but it is still said once and recorded, so a run folder
//! shows how it ran. Running as root makes a missing sandbox a missing wall
//! around the whole machine; that is not a setting to carry over unnoticed
//! from an old card, so it too is asked for.
//!
//! # The run record
//!
//! A run records its [`Clearance`] (provenance, hash, lowered settings, the
//! consent with what it allowed, whether it ran as root) in its archive and
//! `summary.json`. A run folder can be copied from anywhere, so a resume or
//! fork believes a record only when it is signed by this account: an
//! HMAC-SHA-256 with a key made once per user (`run-record.key` beside the
//! user settings file, readable only by its owner), over the record and the
//! hash of the card the run recorded. A record that is not signed, or whose
//! card was changed since, makes the card one from elsewhere
//! ([`Provenance::RunFolder`]), whose lowered settings need consent again.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::engine::provenance::Provenance;
use crate::engine::sandbox::lowered::Lowered;

/// A person's consent to a card's lowered settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Consent {
    /// The hash of the card it is for ([`crate::engine::card::Card::hash`]).
    pub card: String,
    /// The settings allowed, as [`Lowered::setting`] names them.
    pub allowed: Vec<String>,
    /// How it was given ("the command line: --consent, --allow", "the
    /// studio's dialog").
    pub via: String,
    /// When, in seconds since the Unix epoch.
    pub at_unix: u64,
}

impl Consent {
    /// A consent given now, `via` a front end, for the card hashed `card`.
    pub fn new(card: &str, allowed: Vec<String>, via: &str) -> Self {
        Self {
            card: card.to_owned(),
            allowed,
            via: via.to_owned(),
            at_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }

    /// A consent to exactly what `needed` asks for, given `via` a front end
    /// (the studio's Allow button).
    pub fn to(needed: &ConsentNeeded, via: &str) -> Self {
        Self::new(
            &needed.hash,
            needed.lowered.iter().map(|l| l.setting.clone()).collect(),
            via,
        )
    }

    /// The lowered settings of the card hashed `hash` this consent does not
    /// allow (all of them when it is for another card).
    fn missing<'a>(&self, hash: &str, lowered: &'a [Lowered]) -> Vec<&'a Lowered> {
        lowered
            .iter()
            .filter(|l| self.card != hash || !self.allowed.contains(&l.setting))
            .collect()
    }
}

/// Why a card's lowered settings need consent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// The card is from elsewhere.
    FromElsewhere,
    /// Galapagos runs as root and the card runs processes with no sandbox.
    AsRoot,
}

/// Whether a card of `provenance` (`None`: the user's own) with these
/// lowered settings needs consent, for a run as root or not: the rule of
/// the module docs, in one place.
pub fn needs_consent(
    provenance: Option<&Provenance>,
    lowered: &[Lowered],
    as_root: bool,
) -> Option<Why> {
    if lowered.is_empty() {
        None
    } else if provenance.is_some_and(Provenance::is_from_elsewhere) {
        Some(Why::FromElsewhere)
    } else if as_root && lowered.iter().any(|l| l.unsandboxed) {
        Some(Why::AsRoot)
    } else {
        None
    }
}

/// Whether galapagos runs as root (the effective user).
pub fn running_as_root() -> bool {
    crate::engine::platform::running_as_root()
}

/// A run's standing on lowered isolation, recorded in its run folder (see
/// the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clearance {
    /// The card's name, for messages.
    pub card_name: String,
    /// Where the card came from (`None`: the user's own).
    pub provenance: Option<Provenance>,
    /// The card's hash, what a consent is for.
    pub hash: String,
    /// The settings that lower isolation.
    pub lowered: Vec<Lowered>,
    /// Galapagos ran as root.
    pub as_root: bool,
    /// The consent given, with what it allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent: Option<Consent>,
    /// The hash of the card as this run recorded it (the card with the
    /// task's settings and the run's budget), set when recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub recorded: String,
    /// This account's signature of the rest (see the module docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// A run that cannot go without a consent it lacks: what the card asks for,
/// and how to allow it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsentNeeded {
    pub card_name: String,
    pub provenance: Option<Provenance>,
    /// The card's hash: a consent names it.
    pub hash: String,
    /// Every lowered setting of the card (a consent names them all).
    pub lowered: Vec<Lowered>,
    pub why: Why,
    /// A consent given that does not cover them, if one was.
    pub given: Option<Consent>,
}

impl ConsentNeeded {
    /// Where the card came from, in words.
    pub fn from_where(&self) -> String {
        match &self.provenance {
            None => "your own card".to_owned(),
            Some(p) => p.to_string(),
        }
    }

    /// Why it needs consent, in one sentence.
    pub fn reason(&self) -> String {
        match self.why {
            Why::FromElsewhere => format!(
                "the card {} ({}) lowers the sandbox's isolation: it runs only with your consent.",
                self.card_name,
                self.from_where()
            ),
            Why::AsRoot => format!(
                "galapagos runs as root, and the card {} ({}) runs processes with no sandbox, as \
                 root: it runs only with your consent.",
                self.card_name,
                self.from_where()
            ),
        }
    }

    /// What was wrong with a consent that was given, if one was.
    pub fn given_problem(&self) -> Option<String> {
        let given = self.given.as_ref()?;
        Some(if given.card == self.hash {
            let missing: Vec<&str> = given
                .missing(&self.hash, &self.lowered)
                .into_iter()
                .map(|l| l.setting.as_str())
                .collect();
            format!("The consent given does not allow {}.", missing.join(", "))
        } else {
            format!(
                "The consent given is for the card hashed {}, not this one ({}): a changed card \
                 asks again.",
                given.card, self.hash
            )
        })
    }

    /// The command line's flags that give exactly this consent.
    pub fn flags(&self) -> String {
        let settings: Vec<&str> = self.lowered.iter().map(|l| l.setting.as_str()).collect();
        if settings.iter().any(|s| s.contains(',')) {
            let allows: Vec<String> = settings.iter().map(|s| format!("--allow '{s}'")).collect();
            format!("--consent {} {}", self.hash, allows.join(" "))
        } else {
            format!("--consent {} --allow '{}'", self.hash, settings.join(","))
        }
    }
}

impl std::fmt::Display for ConsentNeeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} It asks for:", self.reason())?;
        for l in &self.lowered {
            writeln!(f, "  - {}: {}", l.setting, l.what)?;
        }
        if let Some(problem) = self.given_problem() {
            writeln!(f, "{problem}")?;
        }
        write!(
            f,
            "Nothing was run. To allow exactly these for this card (hash {}; a changed card has \
             another hash and asks again), add:\n  {}",
            self.hash,
            self.flags()
        )
    }
}

impl std::error::Error for ConsentNeeded {}

impl Clearance {
    /// Whether the run may go: refused when the rule asks for a consent that
    /// was not given for this card's hash and every lowered setting.
    pub fn check(&self) -> Result<(), Box<ConsentNeeded>> {
        let Some(why) = needs_consent(self.provenance.as_ref(), &self.lowered, self.as_root) else {
            return Ok(());
        };
        if self
            .consent
            .as_ref()
            .is_some_and(|c| c.missing(&self.hash, &self.lowered).is_empty())
        {
            return Ok(());
        }
        Err(Box::new(ConsentNeeded {
            card_name: self.card_name.clone(),
            provenance: self.provenance.clone(),
            hash: self.hash.clone(),
            lowered: self.lowered.clone(),
            why,
            given: self.consent.clone(),
        }))
    }

    /// What a run says at its start about what is lowered (`None` when
    /// nothing is): each setting, and who allowed it.
    pub fn notice(&self) -> Option<String> {
        if self.lowered.is_empty() {
            return None;
        }
        let by = match (&self.consent, &self.provenance) {
            (Some(c), _) if c.missing(&self.hash, &self.lowered).is_empty() => {
                format!("allowed for this card (hash {}) by {}", self.hash, c.via)
            }
            (_, None) => "your own card".to_owned(),
            (_, Some(p)) => p.to_string(),
        };
        let list: Vec<String> = self.lowered.iter().map(|l| format!("  - {l}")).collect();
        Some(format!(
            "this run lowers the sandbox's isolation ({by}):\n{}",
            list.join("\n")
        ))
    }

    /// The record signed with this account's key, for the card the run
    /// records hashed `recorded` (made once per user when a record needs
    /// it). A run with nothing lowered has nothing to vouch for and is not
    /// signed; neither is one when the key cannot be read or made (its
    /// resume then asks again).
    #[must_use]
    pub fn signed(mut self, recorded: &str) -> Self {
        self.recorded = recorded.to_owned();
        self.tag = None;
        if !self.lowered.is_empty() {
            self.tag = key::read_or_make()
                .ok()
                .map(|k| key::sign(&k, &self.signed_text()));
        }
        self
    }

    /// True when this account signed the record, for a card hashed
    /// `recorded` (the card the run folder holds now).
    pub fn is_signed_for(&self, recorded: &str) -> bool {
        let Some(tag) = &self.tag else {
            return false;
        };
        if self.recorded != recorded {
            return false;
        }
        key::read()
            .ok()
            .flatten()
            .is_some_and(|k| key::verify(&k, &self.signed_text(), tag))
    }

    /// The text signed: the record without its tag, as JSON.
    fn signed_text(&self) -> String {
        let mut bare = self.clone();
        bare.tag = None;
        serde_json::to_string(&bare).unwrap_or_default()
    }
}

/// Where this account's record key lives: `run-record.key` beside the user
/// settings file.
pub fn key_path() -> Option<PathBuf> {
    crate::engine::model::user_settings::user_settings_path()
        .and_then(|p| p.parent().map(|d| d.join("run-record.key")))
}

/// The per-user key that signs run records.
mod key {
    use std::io::Write as _;

    use ring::hmac;
    use ring::rand::SecureRandom as _;

    const KEY_BYTES: usize = 32;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn unhex(text: &str) -> Option<Vec<u8>> {
        let text = text.trim();
        if !text.len().is_multiple_of(2) {
            return None;
        }
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
            .collect()
    }

    /// The key, if this account has one.
    pub(super) fn read() -> Result<Option<Vec<u8>>, String> {
        let path = super::key_path().ok_or("no home directory for the record key")?;
        match std::fs::read_to_string(&path) {
            Ok(text) => unhex(&text)
                .filter(|k| k.len() == KEY_BYTES)
                .map(Some)
                .ok_or_else(|| format!("{}: not a record key", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// The key, made now (random, readable by its owner only) if there is
    /// none yet.
    pub(super) fn read_or_make() -> Result<Vec<u8>, String> {
        if let Some(k) = read()? {
            return Ok(k);
        }
        let path = super::key_path().ok_or("no home directory for the record key")?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let mut key = [0u8; KEY_BYTES];
        ring::rand::SystemRandom::new()
            .fill(&mut key)
            .map_err(|_| "no random numbers for the record key".to_owned())?;
        let made = crate::engine::platform::owner_only(
            std::fs::OpenOptions::new().write(true).create_new(true),
        )
        .open(&path)
        .and_then(|mut f| f.write_all(hex(&key).as_bytes()));
        match made {
            Ok(()) => Ok(key.to_vec()),
            // made by another run meanwhile: use that one
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                read()?.ok_or_else(|| format!("{}: {e}", path.display()))
            }
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    pub(super) fn sign(key: &[u8], text: &str) -> String {
        let k = hmac::Key::new(hmac::HMAC_SHA256, key);
        hex(hmac::sign(&k, text.as_bytes()).as_ref())
    }

    pub(super) fn verify(key: &[u8], text: &str, tag: &str) -> bool {
        let k = hmac::Key::new(hmac::HMAC_SHA256, key);
        unhex(tag).is_some_and(|t| hmac::verify(&k, text.as_bytes(), &t).is_ok())
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn a_tag_verifies_only_its_text_under_its_key() {
            let (a, b) = ([1u8; 32], [2u8; 32]);
            let tag = super::sign(&a, "record");
            assert!(super::verify(&a, "record", &tag));
            assert!(!super::verify(&a, "record!", &tag));
            assert!(!super::verify(&b, "record", &tag));
            assert!(!super::verify(&a, "record", "zz"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lowered(setting: &str, unsandboxed: bool) -> Lowered {
        Lowered {
            setting: setting.to_owned(),
            what: "w".to_owned(),
            unsandboxed,
        }
    }

    fn hub() -> Provenance {
        Provenance::Hub {
            hub: "h".into(),
            card: "a/b@1".into(),
            source: "s".into(),
            pulled: "t".into(),
        }
    }

    fn clearance(provenance: Option<Provenance>, lowered: Vec<Lowered>, root: bool) -> Clearance {
        Clearance {
            card_name: "c".into(),
            provenance,
            hash: "aa".into(),
            lowered,
            as_root: root,
            consent: None,
            recorded: String::new(),
            tag: None,
        }
    }

    #[test]
    fn the_rule() {
        let net = || vec![lowered("evaluator.network", false)];
        let off = || vec![lowered("evaluator.sandbox=none", true)];
        let builtin = Provenance::BuiltIn { name: "x".into() };
        // nothing lowered: never
        assert_eq!(needs_consent(Some(&hub()), &[], true), None);
        // from elsewhere: always
        assert_eq!(
            needs_consent(Some(&hub()), &net(), false),
            Some(Why::FromElsewhere)
        );
        // the user's own or a built-in card: only unsandboxed as root
        for p in [None, Some(&builtin)] {
            assert_eq!(needs_consent(p, &net(), false), None);
            assert_eq!(needs_consent(p, &net(), true), None);
            assert_eq!(needs_consent(p, &off(), false), None);
            assert_eq!(needs_consent(p, &off(), true), Some(Why::AsRoot));
        }
    }

    #[test]
    fn a_consent_covers_its_card_and_every_setting_it_names() {
        let both = vec![
            lowered("evaluator.network", false),
            lowered("evaluator.read_paths=~/.ssh", false),
        ];
        let mut c = clearance(Some(hub()), both, false);
        let e = c.check().unwrap_err();
        assert!(
            e.to_string()
                .contains("--consent aa --allow 'evaluator.network,evaluator.read_paths=~/.ssh'"),
            "{e}"
        );
        c.consent = Some(Consent::new("aa", vec!["evaluator.network".into()], "t"));
        let e = c.check().unwrap_err();
        assert!(
            e.to_string()
                .contains("does not allow evaluator.read_paths=~/.ssh"),
            "{e}"
        );
        c.consent = Some(Consent::to(&e, "t"));
        assert!(c.check().is_ok());
        // the same consent for another card
        c.hash = "bb".into();
        let e = c.check().unwrap_err();
        assert!(
            e.to_string()
                .contains("for the card hashed aa, not this one (bb)"),
            "{e}"
        );
    }

    #[test]
    fn the_notice_names_who_allowed_what() {
        let c = clearance(None, vec![lowered("evaluator.network", false)], false);
        let n = c.notice().unwrap_or_default();
        assert!(
            n.contains("your own card") && n.contains("evaluator.network: w"),
            "{n}"
        );
        assert_eq!(clearance(None, Vec::new(), true).notice(), None);
    }
}
