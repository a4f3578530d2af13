//! Where a yaml_serde error is and what it says, for suites and baselines alike: the position
//! printed in front of the message (`file:line:column: …`) rather than appended to it.

/// yaml_serde's message for an alias bomb: aliases that expand past 100 times the document's
/// events. It is the one error yaml_serde raises without a position.
const REPETITION_LIMIT: &str = "repetition limit exceeded";

/// 1-based (line, column) of `error` in `text`: yaml_serde's own location where it gives one;
/// for the repetition limit, which has none, the first alias in the text (where the expansion
/// starts; a document without aliases cannot reach that limit); else the start of the file.
pub fn position(error: &yaml_serde::Error, text: &str) -> (usize, usize) {
    if let Some(location) = error.location() {
        return (location.line(), location.column());
    }
    if error.to_string() == REPETITION_LIMIT
        && let Some(at) = first_alias(text)
    {
        return at;
    }
    (1, 1)
}

/// The message without yaml_serde's trailing " at line L column C", and an alias bomb said in
/// words people can act on.
pub fn message(error: &yaml_serde::Error) -> String {
    let text = error.to_string();
    if text == REPETITION_LIMIT {
        return format!(
            "{REPETITION_LIMIT}: the aliases (`*name`) here and after expand into more than 100 times the file's own nodes; write the values out instead of nesting aliases"
        );
    }
    match text.rsplit_once(" at line ") {
        Some((message, _)) => message.to_string(),
        None => text,
    }
}

/// Position of the first alias (`*name` where a value starts: after `: `, `- `, `[`, `{`, `,`,
/// `? ` or at the start of a line) outside comments and quoted scalars.
fn first_alias(text: &str) -> Option<(usize, usize)> {
    let mut chars = code_chars(text).peekable();
    // The last character that was not a space or tab on this line, outside quotes.
    let mut before: Option<char> = None;
    while let Some(code) = chars.next() {
        let starts_value = before.is_none_or(|b| "[{,:-?".contains(b));
        let named = chars.peek().is_some_and(|next| {
            next.line == code.line
                && next.column == code.column + 1
                && !next.c.is_whitespace()
                && !"[]{},".contains(next.c)
        });
        if code.c == '*' && starts_value && named {
            return Some((code.line, code.column));
        }
        if code.c == '\n' {
            before = None;
        } else if !matches!(code.c, ' ' | '\t') {
            before = Some(code.c);
        }
    }
    None
}

/// A character of a YAML text outside comments and quoted scalars, with its 1-based position.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodeChar {
    pub c: char,
    pub line: usize,
    pub column: usize,
}

/// The characters of `text` outside comments and quoted scalars (the quotes included), with
/// their positions: what a scan for YAML's structure (flow brackets, aliases) may look at. A
/// `#` starts a comment after whitespace; a quote starts a scalar where a value can start.
pub fn code_chars(text: &str) -> impl Iterator<Item = CodeChar> + '_ {
    #[derive(PartialEq)]
    enum In {
        Code,
        Comment,
        Single,
        Double,
    }
    let mut state = In::Code;
    let (mut line, mut column) = (1, 0);
    let mut previous = '\n';
    let mut chars = text.chars().peekable();
    std::iter::from_fn(move || {
        while let Some(c) = chars.next() {
            column += 1;
            let at = (line, column);
            let mut code = false;
            match state {
                In::Code => match c {
                    '#' if previous.is_whitespace() => state = In::Comment,
                    '\'' | '"' if previous.is_whitespace() || "[{,:-?".contains(previous) => {
                        state = if c == '\'' { In::Single } else { In::Double };
                    }
                    _ => code = true,
                },
                In::Comment if c == '\n' => {
                    state = In::Code;
                    code = true;
                }
                In::Single if c == '\'' => {
                    // `''` is a quote inside a single-quoted scalar.
                    if chars.peek() == Some(&'\'') {
                        chars.next();
                        column += 1;
                    } else {
                        state = In::Code;
                    }
                }
                In::Double if c == '\\' => {
                    chars.next();
                    column += 1;
                }
                In::Double if c == '"' => state = In::Code,
                _ => {}
            }
            if c == '\n' {
                (line, column) = (line + 1, 0);
            }
            previous = c;
            if code {
                return Some(CodeChar {
                    c,
                    line: at.0,
                    column: at.1,
                });
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_alias_is_found_where_a_value_starts() {
        assert_eq!(first_alias("a: &x 1\nb: *x\n"), Some((2, 4)));
        assert_eq!(first_alias("a: [1, *x]\n"), Some((1, 8)));
        assert_eq!(first_alias("- *x\n"), Some((1, 3)));
        assert_eq!(first_alias("*x\n"), Some((1, 1)));
        // Not an alias: inside a plain scalar, quotes or a comment, or a lone `*`.
        assert_eq!(first_alias("a: 2 * 3\n"), None);
        assert_eq!(first_alias("a: b*c\n"), None);
        assert_eq!(first_alias("a: '*x'\nb: \"*y\" # *z\n"), None);
        assert_eq!(first_alias("a: [*, 1]\n"), None);
    }

    #[test]
    fn an_error_with_a_location_keeps_it_and_loses_the_suffix() {
        let text = "a: 1\nb: *nope\n";
        let error = yaml_serde::from_str::<yaml_serde::Value>(text).unwrap_err();
        assert_eq!(position(&error, text), (2, 4));
        assert_eq!(message(&error), "unknown anchor");
    }
}
