//! "Did you mean …?": the nearest known word to a typo, for suite keys, cufile.json keys and
//! subcommands.

/// The closest candidate by edit distance (case-insensitive), if it is close enough to be a typo.
pub fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .iter()
        .map(|candidate| {
            let distance = strsim::damerau_levenshtein(&lower, &candidate.to_ascii_lowercase());
            (distance, *candidate)
        })
        .filter(|(distance, candidate)| *distance <= (candidate.len() / 3).max(2))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}
