//! Text from run reports and the project, made safe for the Markdown and HTML the conformance
//! report writes (issue 27, H17): whatever an implementation or a JSON file says renders as
//! itself.

/// The project's own text (knob questions and sources, which may hold Markdown) in a table
/// cell: pipes escaped, on one line.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Text from a run report (names, versions, reasons, findings: whatever an implementation or a
/// JSON file says) as Markdown text that renders as itself (issue 27, H17): HTML's `&`, `<`, `>`
/// as entities, every character Markdown or a table gives a meaning to backslash-escaped, line
/// breaks as spaces.
pub fn md_text(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        // An underscore between two letters or digits (`cl_khr_int64`) never marks emphasis.
        let inside_word = |i: usize| {
            i > 0
                && chars[i - 1].is_alphanumeric()
                && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric())
        };
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '\n' | '\r' => o.push(' '),
            '_' if inside_word(i) => o.push(c),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '$' => {
                o.push('\\');
                o.push(c);
            }
            c => o.push(c),
        }
    }
    o
}

/// Text from a run report as a code span when it holds nothing a code span cannot carry in a
/// table (a backtick, a pipe, a line break) and nothing HTML-like, else as [`md_text`].
pub fn md_code(s: &str) -> String {
    if s.is_empty() || s.contains(['`', '|', '\n', '\r', '<', '>', '&']) {
        md_text(s)
    } else {
        format!("`{s}`")
    }
}

/// HTML text: `&`, `<`, `>`, `"` and `'` escaped.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_text_renders_as_itself() {
        assert_eq!(
            md_text("a_b _c_ *d* <img> `e` [f](g) |"),
            r"a_b \_c\_ \*d\* &lt;img&gt; \`e\` \[f\](g) \|"
        );
        assert_eq!(md_code("opencl:pocl"), "`opencl:pocl`");
        assert_eq!(md_code("a`b"), r"a\`b");
        assert_eq!(esc("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
    }
}
