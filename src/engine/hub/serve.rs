//! A preview server for a built site: plain HTTP/1.1 `GET`/`HEAD` of its
//! files, on loopback only, one thread per connection. Not a production web
//! server: the site is static and any web server or static host serves it.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// A bound preview server (not yet serving).
pub struct SiteServer {
    listener: TcpListener,
    root: PathBuf,
}

impl SiteServer {
    /// Bind `127.0.0.1:port` (0: any free port) for the site in `root`.
    pub fn bind(root: &Path, port: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))?;
        Ok(Self {
            listener,
            root: root.to_path_buf(),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve until the process ends.
    pub fn serve(self) {
        for stream in self.listener.incoming().flatten() {
            let root = self.root.clone();
            std::thread::Builder::new()
                .name("hub-serve".to_owned())
                .spawn(move || {
                    let _ = handle(stream, &root);
                })
                .ok();
        }
    }
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("yaml" | "yml" | "md" | "txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The file a request path names inside `root`, refusing `..` and the like.
fn resolve(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next()?;
    let path = percent_decode(path)?;
    let mut out = root.to_path_buf();
    for c in Path::new(path.trim_start_matches('/')).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if out.is_dir() {
        out.push("index.html");
    }
    Some(out)
}

/// A file of the site, read by the rules of [`crate::engine::foreign`] (no
/// link followed, a regular file, capped).
fn read_site_file(root: &Path, path: &Path) -> Option<Vec<u8>> {
    let rel = path.strip_prefix(root).ok()?;
    let folder =
        crate::engine::foreign::Folder::open(root, crate::engine::foreign::Links::Never).ok()?;
    folder
        .read(rel, crate::engine::foreign::Limit::SITE_FILE)
        .ok()
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    kind: &str,
    body: &[u8],
    head: bool,
) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if !head {
        stream.write_all(body)?;
    }
    stream.flush()
}

fn handle(mut stream: TcpStream, root: &Path) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?.take(16 * 1024));
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // the headers: read and ignored
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut parts = request.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let head = method == "HEAD";
    if method != "GET" && !head {
        return respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"GET or HEAD only\n",
            false,
        );
    }
    match resolve(root, target).and_then(|p| read_site_file(root, &p).map(|b| (p, b))) {
        Some((path, body)) => respond(&mut stream, "200 OK", content_type(&path), &body, head),
        None => respond(
            &mut stream,
            "404 Not Found",
            "text/plain; charset=utf-8",
            b"not found\n",
            head,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_root() {
        let root = Path::new("/srv/site");
        assert_eq!(
            resolve(root, "/a/b.html?x=1"),
            Some(PathBuf::from("/srv/site/a/b.html"))
        );
        assert_eq!(
            resolve(root, "/a%20b.html"),
            Some(PathBuf::from("/srv/site/a b.html"))
        );
        assert_eq!(resolve(root, "/../etc/passwd"), None);
        assert_eq!(resolve(root, "/a/%2e%2e/%2e%2e/etc"), None);
    }
}
