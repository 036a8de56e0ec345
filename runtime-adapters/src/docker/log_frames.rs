//! Docker's log frames back into lines. Docker's log drivers cut a line longer than 16 KiB into
//! partial messages, and its logs API sends each as a frame of its own, each with the line's one
//! timestamp: only the last ends with a newline. Seen on Docker 20.10.24: a 32,768-character
//! line came as two frames of 16,384 characters and a third holding only the newline, all three
//! stamped alike. Read frame by frame, such a line would be three lines, and the captures, which
//! skip a line not newer than the last one taken, would keep the first 16,384 characters.

use super::captured_lines;
use crate::runtime::CapturedLine;
use drydock_engine::logs::Channel;

/// A line's frames so far, per channel: its stamp (the first frame's) and its text.
#[derive(Debug, Default)]
pub(super) struct Frames {
    stdout: Option<(Vec<u8>, String)>,
    stderr: Option<(Vec<u8>, String)>,
}

impl Frames {
    /// The whole lines `frame` completes on `channel`. A frame that does not end with a newline
    /// is part of a line: kept until the frame that ends it.
    pub(super) fn push(&mut self, channel: Channel, frame: &[u8]) -> Vec<CapturedLine> {
        let pending = match channel {
            Channel::Stderr => &mut self.stderr,
            _ => &mut self.stdout,
        };
        let (stamp, text) = split_stamp(frame);
        let ends_line = frame.ends_with(b"\n");
        match pending {
            Some((_, joined)) => joined.push_str(&String::from_utf8_lossy(text)),
            None if ends_line => return captured_lines(channel, frame),
            None => *pending = Some((stamp.to_vec(), String::from_utf8_lossy(text).into_owned())),
        }
        if !ends_line {
            return Vec::new();
        }
        match pending.take() {
            Some((stamp, joined)) => captured_lines(channel, &[stamp, joined.into_bytes()].concat()),
            None => Vec::new(),
        }
    }

    /// What is left when the stream ends: a last line without its newline, on each channel.
    pub(super) fn finish(&mut self) -> Vec<CapturedLine> {
        let mut lines = Vec::new();
        for (channel, pending) in [(Channel::Stdout, &mut self.stdout), (Channel::Stderr, &mut self.stderr)] {
            if let Some((stamp, joined)) = pending.take() {
                lines.extend(captured_lines(channel, &[stamp, joined.into_bytes()].concat()));
            }
        }
        lines
    }
}

/// A frame's stamp with its space (`2026-12-06T07:53:55.395174759Z `), and the rest; no stamp if
/// the frame does not start with one.
fn split_stamp(frame: &[u8]) -> (&[u8], &[u8]) {
    match frame.iter().position(|b| *b == b' ') {
        Some(space) if frame[..space].ends_with(b"Z") && frame.first().is_some_and(u8::is_ascii_digit) => {
            frame.split_at(space + 1)
        }
        _ => (&[], frame),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAMP: &str = "2026-12-06T07:53:55.395174759Z ";

    fn frame(text: &str) -> Vec<u8> {
        format!("{STAMP}{text}").into_bytes()
    }

    #[test]
    fn a_long_lines_frames_make_one_line_with_its_stamp() {
        let half = "a".repeat(16_384);
        let mut frames = Frames::default();
        assert!(frames.push(Channel::Stdout, &frame(&half)).is_empty());
        assert!(frames.push(Channel::Stdout, &frame(&half)).is_empty());
        let lines = frames.push(Channel::Stdout, &frame("\n"));
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].text.len(), 32_768, "the whole line");
        assert_eq!(lines[0].stamp, 1_796_543_635_395_174_759, "the line's one stamp");
        let short = frames.push(Channel::Stdout, &frame("short\n"));
        assert_eq!(short.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), ["short"]);
    }

    #[test]
    fn each_channel_joins_its_own_frames_and_a_last_partial_line_is_kept_at_the_end() {
        let mut frames = Frames::default();
        assert!(frames.push(Channel::Stdout, &frame("out-")).is_empty());
        let err = frames.push(Channel::Stderr, &frame("err\n"));
        assert_eq!(err.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), ["err"]);
        assert!(frames.push(Channel::Stdout, &frame("continued")).is_empty());
        let rest = frames.finish();
        assert_eq!(
            rest.iter().map(|l| (l.channel, l.text.as_str())).collect::<Vec<_>>(),
            [(Channel::Stdout, "out-continued")]
        );
        assert!(frames.finish().is_empty(), "once");
    }
}
