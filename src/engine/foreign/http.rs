//! Requests to a hub site stay on its origin.

/// Most redirects followed within one origin.
const MAX_REDIRECTS: usize = 10;

/// A redirect policy that follows a redirect only to the origin (scheme,
/// host, port) of the first request, and refuses any other with an error
/// naming both addresses.
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first() else {
            return attempt.follow();
        };
        let origin = |u: &reqwest::Url| {
            (
                u.scheme().to_owned(),
                u.host_str().map(str::to_ascii_lowercase),
                u.port_or_known_default(),
            )
        };
        if origin(first) != origin(attempt.url()) {
            let message = format!(
                "refused a redirect from {} to {}: a hub is read from its own address only \
                 (scheme, host and port); point the hub setting at the address that serves it",
                attempt
                    .previous()
                    .last()
                    .map_or_else(String::new, ToString::to_string),
                attempt.url()
            );
            return attempt.error(message);
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            let message = format!("more than {MAX_REDIRECTS} redirects");
            return attempt.error(message);
        }
        attempt.follow()
    })
}
