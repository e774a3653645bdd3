//! What one proposal may hold of the relay, and the relay's other bounds,
//! in one place.
//!
//! An agent is untrusted: whatever it sends, one proposal holds at most
//! [`SessionLimits`] of the relay (steps and bytes kept for its record,
//! requests open, bytes of bodies and replies in memory), and the relay as
//! a whole at most [`MAX_CONNECTIONS`] connections. The defaults are sized
//! for the agents the built-in cards run (a long session is a few hundred
//! requests of at most a few MiB each) with room to spare, and so that a
//! run of a few agents at once stays within a few hundred MiB whatever they
//! do:
//!
//! | bound | default | past it |
//! |---|---|---|
//! | steps kept | 10,000 | counted, their usage too, but not kept one by one: the last step kept says how many were left out |
//! | bytes of request and reply text kept | 32 MiB | steps keep no text (their usage, status and timing still) |
//! | text kept of one step | 256 KiB of its request, as much of its reply | cut, the full length noted |
//! | text kept of a refused request | 4 KiB | cut |
//! | one request body | 32 MiB | refused with 413 as soon as its length says so (or as it passes it), never read whole |
//! | requests open at once | 32 | refused at once with 429 |
//! | bytes in memory at once (request bodies, whole replies read to be checked) | 96 MiB | a request body that does not fit is refused with 429; a whole reply that does not fit is passed on as it comes |
//! | a whole reply read before it is passed on | 8 MiB | passed on as it comes: its usage is read from it as it goes by |
//! | connections open to the relay (all proposals) | 512 | the next connection waits to be accepted |
//! | a connection's request head | 30 s | the connection is closed |

use std::time::Duration;

/// Steps a proposal's record keeps one by one.
pub const MAX_STEPS: usize = 10_000;
/// Bytes of request and reply text a proposal's record keeps.
pub const MAX_KEPT_BYTES: usize = 32 << 20;
/// Of one step's request or reply, the bytes kept.
pub const STEP_TEXT_LIMIT: usize = 256 << 10;
/// Of a refused request, the bytes kept.
pub const REFUSED_TEXT_LIMIT: usize = 4 << 10;
/// Largest request body the relay reads (an agent's whole conversation).
pub const MAX_REQUEST_BYTES: usize = 32 << 20;
/// Requests of one proposal open at once.
pub const MAX_OPEN_REQUESTS: usize = 32;
/// Bytes one proposal's requests hold in memory at once.
pub const MAX_BYTES_IN_FLIGHT: usize = 96 << 20;
/// Of a whole (not streamed) reply, the bytes read before it is passed on:
/// within it the relay checks the reply and answers 502 for one that is
/// not JSON or broke off; a longer one is passed on as it comes.
pub const WHOLE_REPLY_WINDOW: usize = 8 << 20;
/// Connections open to the relay, over all proposals.
pub const MAX_CONNECTIONS: usize = 512;
/// Longest wait for a connection's request head.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for the endpoint's response header.
pub const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest silence between two chunks of a reply (or of a request body).
pub const STALL_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest a request waits for its proposal's requests in flight to leave
/// room under its cap before it is refused.
pub const ADMISSION_WAIT: Duration = Duration::from_secs(300);
/// Longest [`super::RelaySession::finish`] waits for the requests it cut to
/// be recorded.
pub const FINISH_WAIT: Duration = Duration::from_secs(30);

/// What one proposal may hold of the relay (see the module's doc); the
/// defaults are the constants above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    pub max_steps: usize,
    pub max_kept_bytes: usize,
    pub max_request_bytes: usize,
    pub max_open_requests: usize,
    pub max_bytes_in_flight: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_steps: MAX_STEPS,
            max_kept_bytes: MAX_KEPT_BYTES,
            max_request_bytes: MAX_REQUEST_BYTES,
            max_open_requests: MAX_OPEN_REQUESTS,
            max_bytes_in_flight: MAX_BYTES_IN_FLIGHT,
        }
    }
}
