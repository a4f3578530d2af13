//! Positions of keys in a suite file's text, for errors found after deserialisation (serde only
//! knows positions while it parses). Good enough for block and simple flow style; a miss falls back
//! to the enclosing scenario's line.

/// 1-based (line, column) of the first `key:` at or after line index `from`.
pub fn key(text: &str, from: usize, key: &str) -> Option<(usize, usize)> {
    text.lines()
        .enumerate()
        .skip(from)
        .find_map(|(index, line)| key_column(line, key).map(|column| (index + 1, column)))
}

/// Like [`key`], but only on lines before line `until` (1-based) when it is given.
pub fn key_before(
    text: &str,
    from: usize,
    until: Option<usize>,
    name: &str,
) -> Option<(usize, usize)> {
    key(text, from, name).filter(|(line, _)| until.is_none_or(|until| *line < until))
}

/// Line (1-based) of the next top-level key after line index `from`: where the block that
/// starts there ends.
pub fn block_end(text: &str, from: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .skip(from + 1)
        .find(|(_, line)| !line.starts_with([' ', '\t', '#', '-']) && !line.trim().is_empty())
        .map(|(index, _)| index + 1)
}

/// Position of the `n`th (0-based) `name: <name>` in the text.
pub fn nth_name(text: &str, name: &str, n: usize) -> Option<(usize, usize)> {
    text.lines()
        .enumerate()
        .filter_map(|(index, line)| {
            let column = key_column(line, "name")?;
            let value = line[column - 1 + "name:".len()..]
                .split(['#', ',', '}'])
                .next()?
                .trim()
                .trim_matches(['"', '\'']);
            (value == name).then_some((index + 1, column))
        })
        .nth(n)
}

/// Position of item `index` of the block list under `list_key:`.
pub fn nth_list_item(text: &str, list_key: &str, index: usize) -> Option<(usize, usize)> {
    let (start, _) = key(text, 0, list_key)?;
    let items = text
        .lines()
        .enumerate()
        .skip(start)
        .filter_map(|(line_index, line)| {
            let indent = line.len() - line.trim_start().len();
            line.trim_start()
                .starts_with("- ")
                .then_some((line_index + 1, indent + 1))
        });
    let (_, indent) = items.clone().next()?;
    items.filter(|(_, column)| *column == indent).nth(index)
}

/// Column (1-based) where `key:` appears as a mapping key on this line.
fn key_column(line: &str, key: &str) -> Option<usize> {
    let code = line.split(" #").next().unwrap_or(line);
    let pattern = format!("{key}:");
    let mut search_from = 0;
    while let Some(found) = code[search_from..].find(&pattern) {
        let at = search_from + found;
        let before = code[..at].trim_end();
        if before.is_empty()
            || before.ends_with('-')
            || before.ends_with('{')
            || before.ends_with(',')
        {
            return Some(at + 1);
        }
        search_from = at + pattern.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "suite: s\nscenarios:\n  - name: a\n    files: { size: 1MiB }\n  - name: b\n    reader: posix\n  - {name: a, files: {path: x}}\n";

    #[test]
    fn finds_keys_names_and_items() {
        assert_eq!(key(TEXT, 0, "scenarios"), Some((2, 1)));
        assert_eq!(key(TEXT, 3, "size"), Some((4, 14)));
        assert_eq!(key(TEXT, 0, "reader"), Some((6, 5)));
        assert_eq!(nth_name(TEXT, "a", 0), Some((3, 5)));
        assert_eq!(nth_name(TEXT, "a", 1), Some((7, 6)));
        assert_eq!(nth_list_item(TEXT, "scenarios", 1), Some((5, 3)));
        assert_eq!(nth_list_item(TEXT, "scenarios", 2), Some((7, 3)));
        assert_eq!(nth_list_item(TEXT, "scenarios", 3), None);
        assert_eq!(key_before(TEXT, 3, Some(6), "reader"), None);
        assert_eq!(key_before(TEXT, 3, Some(7), "reader"), Some((6, 5)));
        assert_eq!(block_end(TEXT, 0), Some(2));
        assert_eq!(block_end(TEXT, 1), None);
    }
}
