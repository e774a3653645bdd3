//! Server-sent events, as the HTML standard defines the `text/event-stream`
//! format: lines `field: value`, an event ends at a blank line, `data` lines
//! of one event are joined with newlines, lines starting with `:` are
//! comments (keep-alives).

/// One event: its `event` name (empty when none was given) and its data.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    pub event: String,
    pub data: String,
}

/// Every event in `text`. An event the stream broke off in the middle of
/// (no blank line after it) is still returned: the reader decides from its
/// content whether the reply is whole.
pub fn events(text: &str) -> Vec<Event> {
    let mut out = Vec::new();
    let mut event = String::new();
    let mut data: Option<String> = None;
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut dispatch = |event: &mut String, data: &mut Option<String>| {
        if let Some(d) = data.take() {
            out.push(Event {
                event: std::mem::take(event),
                data: d,
            });
        }
        event.clear();
    };
    for line in text.split('\n') {
        if line.is_empty() {
            dispatch(&mut event, &mut data);
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut event),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    dispatch(&mut event, &mut data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_names_data_comments_and_line_ends() {
        let text = ": keep-alive\r\nevent: message_start\r\ndata: {\"a\":1}\r\n\r\ndata: one\ndata: two\n\nevent: ping\ndata:{}\n\ndata: [DONE]";
        let e = events(text);
        assert_eq!(
            e,
            vec![
                Event {
                    event: "message_start".into(),
                    data: "{\"a\":1}".into()
                },
                Event {
                    event: String::new(),
                    data: "one\ntwo".into()
                },
                Event {
                    event: "ping".into(),
                    data: "{}".into()
                },
                Event {
                    event: String::new(),
                    data: "[DONE]".into()
                },
            ]
        );
        assert!(events("").is_empty());
        assert!(events(": only a comment\n\n").is_empty());
    }
}
