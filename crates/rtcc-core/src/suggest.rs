//! "Did you mean ...?" for a misspelt name: the nearest of the valid ones, when one is close.

use std::borrow::Cow;

/// `" (did you mean \"gcc\"?)"` when one of `candidates` is close to `name` (Damerau–Levenshtein
/// distance at most 2, and under half the name's length), else empty.
pub fn did_you_mean<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    candidates
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|&(d, _)| d <= 2 && 2 * d < name.chars().count().max(2))
        .min_by_key(|&(d, _)| d)
        .map_or(String::new(), |(_, c)| format!(" (did you mean {c:?}?)"))
}

/// An error message that names an unknown value and lists the valid ones, with the nearest valid
/// one named: the two shapes rtcc's errors take, serde's ``unknown field `dealy`, expected one of
/// `delay`, ...`` and ours, `unknown queue kind "codell"; valid kinds: droptail, codel, ...`.
/// Other messages, and those that already guess, come back unchanged.
pub fn annotate(message: &str) -> Cow<'_, str> {
    if message.contains("did you mean") {
        return Cow::Borrowed(message);
    }
    let guess = |name: &str, list: &str, trim: &[char]| {
        let candidates: Vec<&str> = list
            .split([',', ' '])
            .map(|c| c.trim_matches(trim))
            .filter(|c| !c.is_empty() && *c != "or")
            .collect();
        did_you_mean(name, candidates.into_iter())
    };
    // serde: unknown field `name`, expected one of `a`, `b` (or: expected `a` or `b`)
    if let Some(rest) = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("unknown variant `"))
    {
        if let Some((name, tail)) = rest.split_once('`') {
            if let Some((_, list)) = tail.split_once("expected") {
                let list = list.trim_start_matches(" one of");
                let hint = guess(name, list, &['`', ' ']);
                if !hint.is_empty() {
                    let at = message.len() - tail.len();
                    return Cow::Owned(format!("{}{hint}{}", &message[..at], &message[at..]));
                }
            }
        }
        return Cow::Borrowed(message);
    }
    // ours: unknown <what> "name"; valid <whats>: a, b, c
    if let (Some(start), Some(valid)) = (message.find("unknown "), message.find("; valid ")) {
        let named = &message[start..valid];
        if let (Some(open), Some(close)) = (named.find('"'), named.rfind('"')) {
            if let Some((_, list)) = message[valid..].split_once(": ") {
                let hint = guess(&named[open + 1..close], list, &['"', ' ']);
                if !hint.is_empty() {
                    return Cow::Owned(format!("{}{hint}{}", &message[..valid], &message[valid..]));
                }
            }
        }
    }
    Cow::Borrowed(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspelt_names_get_the_nearest_valid_one() {
        assert_eq!(
            did_you_mean("gccc", ["gcc", "sqp"].into_iter()),
            " (did you mean \"gcc\"?)"
        );
        assert_eq!(did_you_mean("quic", ["gcc", "sqp"].into_iter()), "");
        assert_eq!(
            annotate("unknown field `dealy`, expected one of `capacity`, `delay`, `queue`"),
            "unknown field `dealy` (did you mean \"delay\"?), expected one of `capacity`, `delay`, `queue`"
        );
        assert_eq!(
            annotate("unknown queue kind \"codell\"; valid kinds: droptail, codel, pie"),
            "unknown queue kind \"codell\" (did you mean \"codel\"?); valid kinds: droptail, codel, pie"
        );
        // Nothing close, or already guessed: unchanged.
        let far = "unknown queue kind \"red\"; valid kinds: droptail, codel, pie";
        assert_eq!(annotate(far), far);
        let done = "unknown controller \"gccc\" (did you mean \"gcc\"?); valid controllers: gcc";
        assert_eq!(annotate(done), done);
        assert_eq!(
            annotate("the rate must be positive"),
            "the rate must be positive"
        );
    }
}
