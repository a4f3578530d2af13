//! One escaping function per sink, for every string the gate did not write itself: a worker's
//! output, reasons built from it, paths and names from a suite, the `python:` string.
//!
//! | sink | function |
//! |---|---|
//! | stdout and stderr (a CI log) | [`terminal`] |
//! | Markdown (`summary.md`, `$GITHUB_STEP_SUMMARY`, merged summaries) | [`markdown`], [`markdown_code`], [`markdown_block`] |
//! | workflow-command annotations | `report::annotations::escape_data` and `escape_property`: [`controls`] as for the terminal, then the `@actions/core` rules |
//! | `junit.xml` | [`controls`] (XML 1.0 cannot hold most C0 characters even as references), then quick-junit's `XmlString`, which every setter takes, and its writer, which escapes markup |
//! | `report.json` | serde_json, which escapes C0 characters, then [`json`] for DEL and C1 |

use std::fmt::Write;

/// Text for the terminal, where a GitHub Actions runner reads every line of stdout and stderr as
/// a possible workflow command: a line that starts with `::` once leading whitespace is trimmed
/// (`::add-mask::`, `::stop-commands::`, which would also silence the gate's own annotations,
/// `::error …`), or that holds `##[` anywhere (the older form). Such lines get a `\` in front of
/// the `::` or inside the `##[`; control characters are shown escaped (`\r`, `\u{1b}`), since the
/// runner also ends a line at a lone CR and escape sequences can rewrite what a terminal shows.
pub fn terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let visible = controls(line, &['\t']).replace("##[", "#\\#[");
        let body = visible.trim_start();
        out.push_str(&visible[..visible.len() - body.len()]);
        if body.starts_with("::") {
            out.push('\\');
        }
        out.push_str(body);
    }
    out
}

/// Control characters (C0, DEL, C1) other than those in `keep` written as Rust writes them in a
/// string (`\0`, `\r`, `\u{1b}`): visible, and inert in a terminal, a log viewer or an XML
/// parser, where an escape sequence can rewrite what is shown and most C0 characters are not
/// allowed at all.
pub fn controls(text: &str, keep: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && !keep.contains(&c) {
            let _ = write!(out, "{}", c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// JSON text with DEL and the C1 controls (U+007F–U+009F) as `\u` escapes. serde_json escapes
/// only what JSON requires (C0, `"`, `\`) and writes these raw, where a terminal that shows the
/// file may act on them (U+009B is CSI). Outside strings JSON text holds only ASCII punctuation,
/// digits, letters and whitespace, so every such character is inside a string, where the escape
/// reads back as the same character.
pub fn json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if ('\u{7f}'..='\u{9f}').contains(&c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// Text inside a Markdown paragraph, quote or table cell, shown as written: HTML (`<img>`,
/// `<script>`) as text, Markdown punctuation escaped (links, images, emphasis, headings, a cell's
/// `|`), line breaks as `<br>` so that the text stays in its cell or quote, control characters as
/// U+FFFD.
pub fn markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' => out.push_str("<br>"),
            '\r' => {}
            '\t' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A name or path as inline code in a Markdown table cell: a fence longer than any run of
/// backticks in it, `|` escaped (tables split cells before code spans), line breaks and control
/// characters as spaces. Markup inside a code span is shown as text.
pub fn markdown_code(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.replace('|', "\\|");
    let fence = "`".repeat(longest_run_of_backticks(&flat) + 1);
    let pad = if flat.starts_with('`') || flat.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{flat}{pad}{fence}")
}

/// Lines shown verbatim in a fenced code block (`lang` after the opening fence): a fence longer
/// than any run of backticks in them, so that nothing in them can close it; control characters
/// other than line breaks as U+FFFD.
pub fn markdown_block(lang: &str, text: &str) -> String {
    let clean: String = text
        .chars()
        .filter(|c| *c != '\r')
        .map(|c| {
            if c.is_control() && c != '\n' {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect();
    let fence = "`".repeat(longest_run_of_backticks(&clean).max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", clean.trim_end_matches('\n'))
}

fn longest_run_of_backticks(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_commands_in_text_reach_the_terminal_inert() {
        let hostile = "ok\n    ::add-mask::secret\n::stop-commands::pwned\nx\r::error title=t::injected\nsee ##[group]x\n\u{1b}[2Jgone";
        let shown = terminal(hostile);
        assert_eq!(
            shown,
            "ok\n    \\::add-mask::secret\n\\::stop-commands::pwned\nx\\r::error title=t::injected\nsee #\\#[group]x\n\\u{1b}[2Jgone"
        );
        // What the runner parses: lines split at LF and at a lone CR, leading whitespace trimmed.
        for line in shown.split(['\n', '\r']) {
            assert!(!line.trim_start().starts_with("::"), "{line}");
            assert!(!line.contains("##["), "{line}");
        }
        assert_eq!(terminal("plain text, a: b"), "plain text, a: b");
    }

    #[test]
    fn controls_are_shown_escaped_and_json_reads_back_the_same() {
        assert_eq!(
            controls("a\tb\n\0\u{1b}[1m\u{9b}", &['\t']),
            "a\tb\\n\\u{0}\\u{1b}[1m\\u{9b}"
        );
        let text = serde_json::to_string("\u{7f}\u{85}\u{9b}é\u{a0}").unwrap();
        let escaped = json(&text);
        assert_eq!(escaped, "\"\\u007f\\u0085\\u009bé\u{a0}\"");
        assert_eq!(
            serde_json::from_str::<String>(&escaped).unwrap(),
            "\u{7f}\u{85}\u{9b}é\u{a0}"
        );
    }

    #[test]
    fn markup_in_text_stays_text_in_its_cell() {
        let hostile = "a|b\n# heading\n<img src=x onerror=alert(1)><script>alert(1)</script>![i](http://x/p.png) *em* \u{1b}[31m";
        let shown = markdown(hostile);
        assert_eq!(
            shown,
            "a\\|b<br>\\# heading<br>&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(1)&lt;/script&gt;\\!\\[i\\](http://x/p.png) \\*em\\* \u{FFFD}\\[31m"
        );
        assert!(!shown.contains('\n'));
        assert!(!shown.contains("<img") && !shown.contains("<script"));
    }

    #[test]
    fn code_spans_hold_any_name() {
        assert_eq!(markdown_code("s::t[a=1]"), "`s::t[a=1]`");
        assert_eq!(markdown_code("a`b|c\nd"), "``a`b\\|c d``");
        assert_eq!(markdown_code("`x"), "`` `x ``");
    }

    #[test]
    fn a_code_block_cannot_be_closed_from_inside() {
        assert_eq!(markdown_block("text", "a\nb\n"), "```text\na\nb\n```\n");
        assert_eq!(
            markdown_block("text", "x\n```\n<script>\u{7}"),
            "````text\nx\n```\n<script>\u{FFFD}\n````\n"
        );
    }
}
