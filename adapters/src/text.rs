//! Text from outside (shim names and answers, case files) made safe for a terminal and for
//! reports: control characters are shown as visible escapes, never passed through or dropped.

/// `s` with every control character (C0, DEL, C1, and the bidirectional overrides) written as
/// a visible escape: `\n`, `\t`, `\r`, `\e`, else `\u{..}`. Everything else is kept.
pub fn escape_controls(s: &str) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// At most `max` characters of `s`, with a note of how much was left out.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!(
            "{}... ({} more characters)",
            &s[..cut],
            s[cut..].chars().count()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_visible() {
        assert_eq!(escape_controls("a\x1b[2Jb\nc\u{7f}"), "a\\e[2Jb\\nc\\u{7f}");
        assert_eq!(escape_controls("plain ü"), "plain ü");
        assert_eq!(clip("abcdef", 3), "abc... (3 more characters)");
        assert_eq!(clip("abc", 3), "abc");
    }
}
