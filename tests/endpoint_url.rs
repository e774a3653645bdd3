#![allow(clippy::unwrap_used, reason = "tests: a panic is a failed test")]
//! Credentials in an endpoint's URL: a `user:password@` or a key in the query
//! is sent where it belongs and shown nowhere; a query stays a query; a
//! redirect to another server does not carry the Authorization header.
//! Against plain HTTP servers on loopback, started here (std only).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use galapagos::engine::model::resolve::build_model_with_env;
use galapagos::engine::model::{
    LanguageModel, ModelError, ModelOverrides, ModelRequest, ModelSettings, OpenAiConfig,
    OpenAiModel,
};

/// A key variable no test sets: requests go without a bearer key.
const KEY_VAR: &str = "GALAPAGOS_URL_TEST_UNSET_KEY";
const PASSWORD: &str = "pw-in-the-url-93ab";
const QUERY_KEY: &str = "qk-in-the-query-71cc";

/// One request as a server saw it: the request line and headers.
type Heads = Arc<Mutex<Vec<String>>>;

/// Serves each connection with `answer(head)` (a whole HTTP response).
fn server(answer: impl Fn(&str) -> String + Send + 'static) -> (u16, Heads) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads: Heads = Arc::default();
    let kept = Arc::clone(&heads);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(50) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0u8; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let response = answer(&head);
            kept.lock().unwrap().push(head);
            stream.write_all(response.as_bytes()).ok();
        }
    });
    (port, heads)
}

fn ok() -> String {
    let json = serde_json::json!({
        "choices": [{"message": {"role": "assistant", "content": "fine"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}
    })
    .to_string();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{json}",
        json.len()
    )
}

fn config(base: &str) -> OpenAiConfig {
    let mut c = OpenAiConfig::new("url-model", base);
    c.api_key_env = KEY_VAR.to_owned();
    c.key_required = false;
    c.max_attempts = 1;
    c.request_timeout = Duration::from_secs(10);
    c
}

fn request() -> ModelRequest {
    ModelRequest {
        system: String::new(),
        user: "hello".into(),
        seed: 1,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_key_in_the_query_stays_in_the_query_and_is_never_shown() {
    let (port, heads) = server(|_| ok());
    let base = format!("http://127.0.0.1:{port}/v1?api-key={QUERY_KEY}&api-version=2024-06-01");
    let model = OpenAiModel::new(config(&base), 1).unwrap();
    let reply = runtime().block_on(model.complete(&request())).unwrap();
    assert_eq!(reply.text, "fine");
    let heads = heads.lock().unwrap().clone();
    let line = heads[0].lines().next().unwrap();
    assert_eq!(
        line,
        format!("POST /v1/chat/completions?api-key={QUERY_KEY}&api-version=2024-06-01 HTTP/1.1")
    );
    let shown = model.describe();
    assert!(!shown.contains(QUERY_KEY), "{shown}");
    assert!(
        shown.contains("api-key=[redacted]&api-version=2024-06-01"),
        "{shown}"
    );
    assert!(!format!("{:?}", model.config()).contains(QUERY_KEY));
}

#[test]
fn a_password_in_the_url_is_sent_as_basic_auth_and_shown_nowhere() {
    let (port, heads) = server(|_| ok());
    let base = format!("http://user:{PASSWORD}@127.0.0.1:{port}/v1");
    let model = OpenAiModel::new(config(&base), 1).unwrap();
    runtime().block_on(model.complete(&request())).unwrap();
    let head = heads.lock().unwrap()[0].clone();
    assert!(
        head.lines()
            .next()
            .unwrap()
            .starts_with("POST /v1/chat/completions HTTP/1.1"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase().contains("authorization: basic "),
        "the URL's credentials were sent: {head}"
    );
    let shown = model.describe();
    assert_eq!(
        shown,
        format!("url-model @ http://[redacted]@127.0.0.1:{port}/v1")
    );
    // Through the run's model resolution, as --api-base gives it: the
    // description printed and archived has no credential either.
    let overrides = ModelOverrides {
        api_base: Some(base.clone()),
        model: Some("m".into()),
        api_key_env: Some(KEY_VAR.into()),
        ..ModelOverrides::default()
    };
    let (model, desc) = build_model_with_env(
        None,
        &overrides,
        &ModelSettings::default(),
        galapagos::engine::model::default_model(),
        &|_| None,
    )
    .unwrap();
    assert!(
        !desc.contains(PASSWORD) && desc.contains("[redacted]@127.0.0.1"),
        "{desc}"
    );
    assert!(!model.describe().contains(PASSWORD));
    // A server that refuses: the error names the endpoint without the password.
    let (port, _) = server(|_| {
        "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned()
    });
    let model = OpenAiModel::new(
        config(&format!("http://user:{PASSWORD}@127.0.0.1:{port}/v1")),
        1,
    )
    .unwrap();
    let err = runtime().block_on(model.complete(&request())).unwrap_err();
    let ModelError::Fatal { message } = err else {
        panic!("401 is fatal: {err:?}")
    };
    assert!(
        message.contains("authentication failed") && !message.contains(PASSWORD),
        "{message}"
    );
}

/// A redirect to another server (another port is another origin) is
/// followed without the Authorization header: the key goes only to the
/// endpoint it was configured for.
#[test]
fn a_redirect_to_another_server_drops_the_authorization_header() {
    let (other_port, other_heads) = server(|_| ok());
    let (port, heads) = server(move |_| {
        format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.1:{other_port}/v1/chat/completions\r\n\
             content-length: 0\r\nconnection: close\r\n\r\n"
        )
    });
    // A variable set in every test process stands for the key, so no test
    // changes the environment.
    let key = std::env::var("PATH").unwrap();
    let mut c = config(&format!("http://127.0.0.1:{port}/v1"));
    c.api_key_env = "PATH".into();
    let model = OpenAiModel::new(c, 1).unwrap();
    let reply = runtime().block_on(model.complete(&request())).unwrap();
    assert_eq!(reply.text, "fine", "the redirect was followed");
    let first = heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(
        first.contains(&format!(
            "authorization: bearer {}",
            key.to_ascii_lowercase()
        )),
        "the endpoint itself got the key: {first}"
    );
    let second = other_heads.lock().unwrap().clone();
    assert_eq!(second.len(), 1, "the other server was asked once");
    assert!(
        !second[0].to_ascii_lowercase().contains("authorization"),
        "the key followed the redirect: {}",
        second[0]
    );
    assert!(!second[0].contains(&key));
}
