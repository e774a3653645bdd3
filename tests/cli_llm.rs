#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! End to end through the CLI flags against a real OpenAI-compatible server on
//! loopback (started here, std only). The server answers like a model: it runs
//! the built-in offline model on the prompt it receives.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use galapagos::engine::model::{ModelRequest, OfflineModel};

const SECRET: &str = "sk-test-DO-NOT-LEAK-0123456789abcdef";

/// Serve `/v1/chat/completions` until `max_requests`, checking the bearer
/// key (a connection closed before a request, a run's reachability check,
/// is not one).
fn serve(listener: TcpListener, max_requests: usize, seen: Arc<AtomicUsize>) {
    let model = OfflineModel::new();
    let mut served = 0;
    for stream in listener.incoming() {
        if served == max_requests {
            break;
        }
        let Ok(mut stream) = stream else { continue };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut content_length = 0usize;
        let mut authorized = false;
        let mut lines = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            lines += 1;
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                content_length = v.trim().parse().unwrap_or(0);
            }
            if line.trim_end() == format!("Authorization: Bearer {SECRET}")
                || line.trim_end() == format!("authorization: Bearer {SECRET}")
            {
                authorized = true;
            }
        }
        if lines == 0 {
            continue;
        }
        served += 1;
        let mut body = vec![0u8; content_length];
        reader.read_exact(&mut body).unwrap();
        seen.fetch_add(1, Ordering::SeqCst);
        let response = if authorized {
            let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let messages = req["messages"].as_array().unwrap();
            let system = messages[0]["content"].as_str().unwrap_or("").to_owned();
            let user = messages[1]["content"].as_str().unwrap_or("").to_owned();
            let seed = user.len() as u64 * 31 + seen.load(Ordering::SeqCst) as u64;
            let text = model.reply_text(&ModelRequest { system, user, seed });
            let json = serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 50}
            })
            .to_string();
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
                json.len()
            )
        } else {
            let json = r#"{"error":{"message":"bad key"}}"#;
            format!(
                "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
                json.len()
            )
        };
        stream.write_all(response.as_bytes()).ok();
    }
}

fn contains_secret(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| {
            let p = e.path();
            if p.is_dir() {
                contains_secret(&p)
            } else {
                std::fs::read(&p)
                    .map(|b| String::from_utf8_lossy(&b).contains(SECRET))
                    .unwrap_or(false)
            }
        })
}

#[test]
fn best_of_n_runs_against_a_local_openai_compatible_server_and_counts_tokens() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(AtomicUsize::new(0));
    let s2 = Arc::clone(&seen);
    let server = std::thread::spawn(move || serve(listener, 200, s2));
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args([
            "run",
            "cards/best_of_n.yaml",
            "--task",
            "assets/tasks/circle_packing",
            "--iterations",
            "12",
            "--quiet",
        ])
        .args([
            "--api-base",
            &format!("http://127.0.0.1:{port}/v1"),
            "--model",
            "fake-coder",
            "--api-key-env",
            "GALAPAGOS_TEST_KEY",
        ])
        .arg("--out")
        .arg(out.path())
        .env("GALAPAGOS_TEST_KEY", SECRET)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(
        seen.load(Ordering::SeqCst) >= 12,
        "the server answered every iteration"
    );
    let tokens_line = stdout.lines().find(|l| l.starts_with("tokens:")).unwrap();
    let prompt_tokens: u64 = tokens_line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(prompt_tokens >= 12_000, "{tokens_line}");
    assert!(stdout.contains("fake-coder @ http://127.0.0.1"), "{stdout}");
    assert!(!stdout.contains("offline, no endpoint"), "{stdout}");
    assert!(
        !contains_secret(out.path()),
        "the key leaked into the run folder"
    );
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    drop(server);
}

#[test]
fn a_rejected_key_stops_the_run_at_once_naming_the_variable_not_the_value() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(AtomicUsize::new(0));
    let s2 = Arc::clone(&seen);
    std::thread::spawn(move || serve(listener, 50, s2));
    let out = tempfile::tempdir().unwrap();
    let wrong = "sk-wrong-key-abcdefghijklmnop";
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args([
            "run",
            "cards/best_of_n.yaml",
            "--task",
            "assets/tasks/circle_packing",
            "--iterations",
            "50",
            "--quiet",
        ])
        .args([
            "--api-base",
            &format!("http://127.0.0.1:{port}/v1"),
            "--model",
            "fake-coder",
            "--api-key-env",
            "GALAPAGOS_TEST_KEY",
        ])
        .arg("--out")
        .arg(out.path())
        .env("GALAPAGOS_TEST_KEY", wrong)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("GALAPAGOS_TEST_KEY"), "{stderr}");
    assert!(!stderr.contains(wrong));
    assert_eq!(seen.load(Ordering::SeqCst), 1, "stopped at the first 401");
}

#[test]
fn a_server_that_never_answers_is_cut_at_the_first_byte_timeout_and_the_retry_is_said() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(AtomicUsize::new(0));
    let s2 = Arc::clone(&seen);
    std::thread::spawn(move || {
        // The first request is read by nobody and never answered; the
        // connection stays open while the rest are served. (A connection
        // closed before sending anything, the run's reachability check,
        // is passed over.)
        let _silent = loop {
            let (s, _) = listener.accept().unwrap();
            if s.peek(&mut [0u8; 1]).unwrap_or(0) > 0 {
                break s;
            }
        };
        serve(listener, 50, s2);
    });
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".config");
    std::fs::create_dir_all(config.join("galapagos")).unwrap();
    let base = format!("http://127.0.0.1:{port}/v1");
    std::fs::write(
        config.join("galapagos/settings.json"),
        format!(r#"{{"endpoints":[{{"api_base":"{base}","first_byte_timeout_secs":1.0}}]}}"#),
    )
    .unwrap();
    let out = home.path().join("runs");
    let started = std::time::Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_galapagos"))
        .args([
            "run",
            "cards/best_of_n.yaml",
            "--task",
            "assets/tasks/circle_packing",
            "--iterations",
            "2",
            "--quiet",
            "--api-base",
            &base,
            "--model",
            "fake-coder",
            "--api-key-env",
            "GALAPAGOS_TEST_KEY",
        ])
        .arg("--out")
        .arg(&out)
        .env("GALAPAGOS_TEST_KEY", SECRET)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", &config)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let said = format!(
        "warning: fake-coder at {base}: attempt 1 of 4 failed (no response header within the \
         first-byte timeout of 1.0 s); retrying in"
    );
    assert!(stderr.contains(&said), "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    // The run's record says it too.
    let dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let events = galapagos::engine::archive::Archive::open(&dir)
        .unwrap()
        .events()
        .unwrap();
    assert!(
        events
            .iter()
            .any(|(_, level, m)| level == "warn" && m.contains("attempt 1 of 4 failed")),
        "{events:?}"
    );
}
