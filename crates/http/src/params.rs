//! Request parameters as graphite-web (Django) sees them: the query string, then a
//! form-encoded POST body appended to it. A repeated key keeps every value in order;
//! a single lookup returns the last one, as Django's `QueryDict` does.

/// The merged GET and POST parameters of one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    /// Parses a query string (without `?`) and an optional form body.
    pub fn parse(query: Option<&str>, form_body: Option<&[u8]>) -> Params {
        let mut pairs: Vec<(String, String)> = Vec::new();
        if let Some(q) = query {
            pairs.extend(form_urlencoded::parse(q.as_bytes()).into_owned());
        }
        if let Some(body) = form_body {
            pairs.extend(form_urlencoded::parse(body).into_owned());
        }
        Params { pairs }
    }

    /// The last value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `key`, in order.
    pub fn get_all(&self, key: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == key)
    }

    /// Every (key, value) pair, in order.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_then_post_last_wins() {
        let p = Params::parse(
            Some("target=a.b&format=csv&from=-1h"),
            Some(b"target=c.d&format=json&x=%7Ba%2Cb%7D+c"),
        );
        assert_eq!(p.get_all("target"), vec!["a.b", "c.d"]);
        assert_eq!(p.get("format"), Some("json"));
        assert_eq!(p.get("from"), Some("-1h"));
        assert_eq!(p.get("x"), Some("{a,b} c"));
        assert!(p.contains("from"));
        assert!(!p.contains("until"));
        assert_eq!(p.get("until"), None);
    }
}
