//! The synthetic genome stream the studio benches load (`studio_frame`,
//! `archive_open`): deterministic, shaped like a run's genomes (program text
//! in an EVOLVE-BLOCK, a real unified diff against the parent, prompt,
//! reply, scores, one in ten invalid with an error).

use std::collections::BTreeMap;

use galapagos::engine::genome::{FITNESS_KEY, Genome, GenomeMeta, Prompt, TokenUsage};
use galapagos::engine::text::unified_diff;

/// Tuned constants per program (one ~40-byte line each): a genome is about
/// 2 KB as JSON.
const CONSTANTS: u64 = 12;

/// Program `i` of the stream.
pub fn program(i: u64) -> String {
    let mut s = String::from("# EVOLVE-BLOCK-START\nimport math\n\n");
    for k in 0..CONSTANTS {
        s.push_str(&format!(
            "C{k} = {:.6}  # tuned constant {k}\n",
            ((i * 31 + k * 7) % 97) as f64 / 13.0
        ));
    }
    s.push_str("# EVOLVE-BLOCK-END\n\n\ndef run():\n    return [C0, C1, C2, C3]\n");
    s
}

/// Genome `i` of the stream (splitmix-style hash): its parent is an earlier
/// genome.
pub fn genome(i: u64) -> Genome {
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ 0xD1B5_4A32_D192_ED03;
    let valid = i == 0 || !h.is_multiple_of(10);
    let parent = if i == 0 { None } else { Some(h % i) };
    let content = program(i);
    let mut scores = BTreeMap::new();
    if valid {
        let base = (i as f64 + 10.0).ln() / 12.0;
        let noise = (h % 1000) as f64 / 4000.0;
        scores.insert(FITNESS_KEY.to_owned(), base + noise);
        scores.insert("mse".to_owned(), 1.0 / (base + noise + 0.1));
        scores.insert("runtime_s".to_owned(), (h % 500) as f64 / 100.0);
    }
    Genome {
        id: i,
        parent_id: parent,
        inspiration_ids: parent.map(|p| vec![p / 2]).unwrap_or_default(),
        iteration: i,
        attempt: 0,
        valid,
        scores,
        diff: parent.map(|p| unified_diff(&program(p), &content)),
        content: content.into(),
        error: (!valid).then(|| "Traceback: ZeroDivisionError: division by zero".to_owned()),
        artifacts: BTreeMap::from([("stdout".to_owned(), format!("ran candidate {i}\n"))]),
        metadata: GenomeMeta {
            generation: 0,
            depth: (i % 17) as u32,
            island: None,
            model: Some("offline".to_owned()),
            patch_type: "diff".to_owned(),
            features: BTreeMap::new(),
        },
        prompt: parent.map(|_| Prompt {
            system: "You are an expert programmer improving a program.".to_owned(),
            user: format!("Improve program {i}. Keep the EVOLVE-BLOCK markers."),
        }),
        response: parent.map(|_| {
            "Raise C0.\n<<<<<<< SEARCH\nC0 = 1\n=======\nC0 = 2\n>>>>>>> REPLACE\n".to_owned()
        }),
        timings: Default::default(),
        usage: Some(TokenUsage {
            prompt_tokens: 800,
            completion_tokens: 120,
            cost_usd: None,
            ..TokenUsage::default()
        }),
        ..Genome::default()
    }
}
