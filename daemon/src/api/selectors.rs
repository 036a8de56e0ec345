//! Label and field selectors, as Kubernetes parses them.
//!
//! *Guarantees*: label selectors accept `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`
//! and `!a`, comma-separated (all must hold); anything else is a 400. Field selectors accept
//! `metadata.name` and `metadata.namespace` with `=`, `==` and `!=`; other fields are a 400.

use super::status::{ApiError, ApiResult};
use drydock_engine::api::Object;
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.contains(l)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        }
    }
}

/// A parsed label selector; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    pub fn parse(text: &str) -> ApiResult<Self> {
        split_top_level(text)?
            .iter()
            .map(|term| parse_requirement(term.trim()))
            .collect::<ApiResult<Vec<_>>>()
            .map(LabelSelector)
            .map_err(|e| ApiError::BadRequest(format!("unable to parse requirement: {e} in labelSelector {text:?}")))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| r.matches(labels))
    }
}

/// Split on commas outside parentheses.
fn split_top_level(text: &str) -> ApiResult<Vec<String>> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let (mut terms, mut current, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(ApiError::BadRequest(format!("unbalanced parentheses in labelSelector {text:?}")));
        }
        current.push(c);
    }
    if depth != 0 {
        return Err(ApiError::BadRequest(format!("unbalanced parentheses in labelSelector {text:?}")));
    }
    terms.push(current);
    Ok(terms)
}

fn parse_requirement(term: &str) -> ApiResult<Requirement> {
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Requirement::NotExists(label_key(key.trim())?));
    }
    for (op, build) in [
        ("!=", Requirement::NotEquals as fn(String, String) -> Requirement),
        ("==", Requirement::Equals),
        ("=", Requirement::Equals),
    ] {
        if let Some((key, value)) = term.split_once(op) {
            return Ok(build(label_key(key.trim())?, label_value(value.trim())?));
        }
    }
    let words: Vec<&str> = term.splitn(2, char::is_whitespace).collect();
    match words.as_slice() {
        [key] => Ok(Requirement::Exists(label_key(key)?)),
        [key, rest] => {
            let rest = rest.trim();
            let (op, set) = rest.split_once('(').ok_or_else(|| bad(term))?;
            let set = set.strip_suffix(')').ok_or_else(|| bad(term))?;
            let values = set.split(',').map(|v| label_value(v.trim())).collect::<ApiResult<Vec<_>>>()?;
            match op.trim() {
                "in" => Ok(Requirement::In(label_key(key)?, values)),
                "notin" => Ok(Requirement::NotIn(label_key(key)?, values)),
                _ => Err(bad(term)),
            }
        }
        _ => Err(bad(term)),
    }
}

fn bad(term: &str) -> ApiError {
    ApiError::BadRequest(format!("found {term:?}, expected a requirement"))
}

fn label_key(key: &str) -> ApiResult<String> {
    if !is_qualified_name(key) {
        return Err(ApiError::BadRequest(format!("invalid label key {key:?}")));
    }
    Ok(key.to_string())
}

/// `[prefix/]name`: a DNS subdomain prefix and a name of up to 63 alphanumerics, `-`, `_`, `.`
/// (what Kubernetes allows as a label or annotation key).
pub fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    });
    prefix_ok && !name.is_empty() && is_label_value(name)
}

fn label_value(value: &str) -> ApiResult<String> {
    if is_label_value(value) {
        Ok(value.to_string())
    } else {
        Err(ApiError::BadRequest(format!("invalid label value {value:?}")))
    }
}

/// Empty, or up to 63 alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
pub fn is_label_value(value: &str) -> bool {
    let b = value.as_bytes();
    b.is_empty()
        || (b.len() <= 63
            && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric())
}

/// A parsed field selector on `metadata.name` / `metadata.namespace`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    pub fn parse(text: &str) -> ApiResult<Self> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, true, v)
            } else {
                return Err(ApiError::BadRequest(format!("invalid field selector {term:?}: expected field=value")));
            };
            let field = field.trim();
            if !matches!(field, "metadata.name" | "metadata.namespace") {
                return Err(ApiError::BadRequest(format!(
                    "field label not supported: {field} (only metadata.name and metadata.namespace)"
                )));
            }
            terms.push((field.to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector(terms))
    }

    pub fn matches(&self, object: &Object) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let actual = match field.as_str() {
                "metadata.name" => object.metadata.name.as_str(),
                _ => object.metadata.namespace.as_deref().unwrap_or(""),
            };
            (actual == value) == *equal
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_issue_selector_parses_and_matches() {
        let s = LabelSelector::parse("a=b,c!=d,e in (x,y),!f,g").unwrap();
        assert!(s.matches(&labels(&[("a", "b"), ("e", "x"), ("g", "")])));
        assert!(!s.matches(&labels(&[("a", "b"), ("e", "x"), ("g", ""), ("f", "1")])));
        assert!(!s.matches(&labels(&[("a", "b"), ("c", "d"), ("e", "x"), ("g", "")])));
        assert!(!s.matches(&labels(&[("a", "b"), ("e", "z"), ("g", "")])));
        let s = LabelSelector::parse("app.kubernetes.io/name notin (web, db)").unwrap();
        assert!(s.matches(&labels(&[])));
        assert!(!s.matches(&labels(&[("app.kubernetes.io/name", "db")])));
    }

    #[test]
    fn bad_selectors_are_refused() {
        for bad in ["a=b=c", "a in x", "(a", "a in (x", "=b", "a b c", "-a", "a==b)"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
        assert!(FieldSelector::parse("spec.image=x").is_err());
        assert!(FieldSelector::parse("metadata.name").is_err());
        assert!(FieldSelector::parse("metadata.name!=a,metadata.namespace=b").is_ok());
    }
}
