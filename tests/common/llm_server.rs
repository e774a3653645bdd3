//! A scripted model server on loopback for the protocol, quirk, caching and
//! `models check` tests: a plain HTTP/1.1 responder on a tokio `TcpListener`
//! (no mock library) on a thread of its own, so sync tests and tests that
//! start the command line can use it too. A handler decides each reply from
//! the request it saw; replies are whole bodies, server-sent event streams
//! (sent event by event with a gap, optionally going silent before the end),
//! any of those after a delay, or silence. It counts the requests it holds
//! at once (read, not yet answered), and the most it held.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub target: String,
    /// Request line and headers.
    pub head: String,
    pub body: Value,
}

impl Seen {
    /// A header's value (names compared without case).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }

    /// The path without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// What the server sends back.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A whole body with a content length.
    Whole {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// `text/event-stream`: each event sent `gap` after the last; with
    /// `hang`, the server goes silent after them instead of closing.
    Events {
        events: Vec<String>,
        gap: Duration,
        hang: bool,
    },
    /// Read the request, never answer.
    Hang,
    /// This reply, after a delay (the request held meanwhile).
    After(Duration, Box<Reply>),
}

impl Reply {
    /// A JSON body.
    pub fn json(status: u16, body: &Value) -> Reply {
        Reply::Whole {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// A body as given, with extra headers.
    pub fn with(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
        Reply::Whole {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: body.to_owned(),
        }
    }

    /// A stream of events, closed at its end.
    pub fn events(events: Vec<String>) -> Reply {
        Reply::Events {
            events,
            gap: Duration::from_millis(5),
            hang: false,
        }
    }
}

/// `event: NAME` / `data: JSON` as one server-sent event.
pub fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// A `data:` line alone as one event (Chat Completions streams).
pub fn data(data: &str) -> String {
    format!("data: {data}\n\n")
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// A running server.
pub struct LlmServer {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    held: Arc<Held>,
}

/// Requests read and not yet answered: now, and the most at once.
#[derive(Default)]
struct Held {
    now: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
}

impl LlmServer {
    /// Starts a server answering each request with `handler`.
    pub fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> LlmServer {
        let handler: Arc<Handler> = Arc::new(handler);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let held = Arc::new(Held::default());
        let held2 = Arc::clone(&held);
        let (tx, rx) = std::sync::mpsc::channel();
        let seen2 = Arc::clone(&seen);
        std::thread::Builder::new()
            .name("llm-server".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("server runtime");
                rt.block_on(async move {
                    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
                    tx.send(listener.local_addr().expect("addr"))
                        .expect("send addr");
                    while let Ok((sock, _)) = listener.accept().await {
                        let handler = Arc::clone(&handler);
                        let seen = Arc::clone(&seen2);
                        let held = Arc::clone(&held2);
                        tokio::spawn(async move { serve(sock, handler, seen, held).await });
                    }
                });
            })
            .expect("server thread");
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("server started");
        LlmServer {
            origin: format!("http://{addr}"),
            seen,
            held,
        }
    }

    /// The most requests held at once so far (read, not yet answered).
    pub fn most_at_once(&self) -> usize {
        self.held.most.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// `origin` + `path` (`/v1`).
    pub fn base(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

/// Reads one HTTP/1.1 request (headers, then a body of its Content-Length).
pub async fn read_request(sock: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let mut words = head.split_whitespace();
    let method = words.next().unwrap_or("").to_owned();
    let target = words.next().unwrap_or("").to_owned();
    let body = serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or(Value::Null);
    Some(Seen {
        method,
        target,
        head,
        body,
    })
}

async fn serve(
    mut sock: TcpStream,
    handler: Arc<Handler>,
    seen: Arc<Mutex<Vec<Seen>>>,
    held: Arc<Held>,
) {
    use std::sync::atomic::Ordering;
    let Some(request) = read_request(&mut sock).await else {
        return;
    };
    seen.lock().expect("lock").push(request.clone());
    let now = held.now.fetch_add(1, Ordering::SeqCst) + 1;
    held.most.fetch_max(now, Ordering::SeqCst);
    let mut reply = handler(&request);
    while let Reply::After(delay, then) = reply {
        tokio::time::sleep(delay).await;
        reply = *then;
    }
    answer(&mut sock, reply).await;
    held.now.fetch_sub(1, Ordering::SeqCst);
    let _ = sock.shutdown().await;
}

async fn answer(sock: &mut TcpStream, reply: Reply) {
    match reply {
        Reply::Whole {
            status,
            headers,
            body,
        } => {
            let mut out = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            out.push_str(&body);
            let _ = sock.write_all(out.as_bytes()).await;
        }
        Reply::Events { events, gap, hang } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
            if sock.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for e in events {
                tokio::time::sleep(gap).await;
                if sock.write_all(e.as_bytes()).await.is_err() || sock.flush().await.is_err() {
                    return;
                }
            }
            if hang {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
        }
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        Reply::After(..) => {}
    }
}
