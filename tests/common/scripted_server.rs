//! An OpenAI-compatible server on 127.0.0.1 that answers chat requests with
//! a script of replies, in order (the last one again once the script is
//! spent), and keeps every request body it received (a connection closed
//! without a request is not one).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

pub struct ScriptedServer {
    pub port: u16,
    bodies: Arc<Mutex<Vec<String>>>,
}

impl ScriptedServer {
    pub fn start(replies: Vec<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0usize;
                let mut lines = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    lines += 1;
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                // a connection closed before a request (a run's reachability
                // check) is no request
                if lines == 0 {
                    continue;
                }
                let mut body = vec![0u8; length];
                if reader.read_exact(&mut body).is_err() {
                    continue;
                }
                let n = {
                    let mut kept = kept.lock().unwrap();
                    kept.push(String::from_utf8_lossy(&body).into_owned());
                    kept.len()
                };
                let reply = &replies[(n - 1).min(replies.len() - 1)];
                let json = serde_json::json!({
                    "choices": [{"message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20}
                })
                .to_string();
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{json}",
                    json.len()
                );
                stream.write_all(response.as_bytes()).ok();
            }
        });
        Self { port, bodies }
    }

    /// Every request body received so far.
    pub fn bodies(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }

    /// The user message of the `i`th request (0-based).
    pub fn user_message(&self, i: usize) -> String {
        let body: serde_json::Value = serde_json::from_str(&self.bodies()[i]).unwrap();
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    }
}
