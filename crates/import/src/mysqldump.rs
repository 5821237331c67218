//! The rows of a `mysqldump` file: what GrowthForecast's MySQL back end
//! (`--mysql`) keeps in its tables, dumped as SQL text.
//!
//! Read: `CREATE TABLE` (for the order of a table's columns) and `INSERT INTO` (also
//! `INSERT IGNORE INTO`, `REPLACE INTO`) with or without a column list, one or many
//! row tuples (`--extended-insert`, the default, or not); values `NULL`, numbers,
//! `0x…` hex, and strings in single or double quotes with MySQL's backslash escapes
//! (`\0 \' \" \b \n \r \t \Z \\ \% \_`) and doubled quotes. Everything else
//! (comments, `/*!…*/` settings, `LOCK TABLES`, `DROP TABLE`, `SET`) is skipped up to
//! its `;`.
//!
//! A statement that cannot be read stops the reading there: the rows before it are
//! kept, and the problem is reported with its byte offset (a dump cut short ends with
//! such a statement). Never a panic (`fuzz/src/gf_meta.rs`, mode 3).

use std::collections::HashMap;

/// A value of a row.
#[derive(Clone, Debug, PartialEq)]
pub enum SqlValue {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

/// One table's rows, each as long as `columns` when the columns are known.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// From the `INSERT`'s column list or the `CREATE TABLE`; empty when neither.
    pub columns: Vec<String>,
    pub rows: Vec<Vec<SqlValue>>,
}

/// What a dump holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dump {
    pub tables: HashMap<String, Table>,
    /// Where reading stopped, and why (`None`: the whole text was read).
    pub problem: Option<(usize, String)>,
}

struct P<'a> {
    b: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        loop {
            while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                self.i += 1;
            }
            if self.b[self.i..].starts_with(b"--") || self.peek() == Some(b'#') {
                while self.peek().is_some_and(|c| c != b'\n') {
                    self.i += 1;
                }
            } else if self.b[self.i..].starts_with(b"/*") && !self.b[self.i..].starts_with(b"/*!") {
                match find(&self.b[self.i + 2..], b"*/") {
                    Some(k) => self.i += 2 + k + 2,
                    None => self.i = self.b.len(),
                }
            } else {
                return;
            }
        }
    }

    fn keyword(&mut self, k: &str) -> bool {
        self.ws();
        let end = self.i + k.len();
        let ok = self
            .b
            .get(self.i..end)
            .is_some_and(|s| s.eq_ignore_ascii_case(k.as_bytes()))
            && self
                .b
                .get(end)
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'));
        if ok {
            self.i = end;
        }
        ok
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected {:?}", c as char))
        }
    }

    /// A table or column name: `quoted` or bare.
    fn ident(&mut self) -> Result<String, String> {
        self.ws();
        if self.peek() == Some(b'`') {
            let mut out = Vec::new();
            self.i += 1;
            loop {
                match self.peek() {
                    None => return Err("a name without its closing `".into()),
                    Some(b'`') if self.b.get(self.i + 1) == Some(&b'`') => {
                        out.push(b'`');
                        self.i += 2;
                    }
                    Some(b'`') => {
                        self.i += 1;
                        break;
                    }
                    Some(c) => {
                        out.push(c);
                        self.i += 1;
                    }
                }
            }
            return String::from_utf8(out).map_err(|_| "a name that is not UTF-8".into());
        }
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
        {
            self.i += 1;
        }
        if start == self.i {
            return Err("expected a name".into());
        }
        Ok(String::from_utf8_lossy(&self.b[start..self.i]).into_owned())
    }

    fn string(&mut self, q: u8) -> Result<String, String> {
        let mut out = Vec::new();
        self.i += 1;
        loop {
            let Some(c) = self.peek() else {
                return Err("a string without its closing quote".into());
            };
            self.i += 1;
            if c == b'\\' {
                let Some(e) = self.peek() else {
                    return Err("a string without its closing quote".into());
                };
                self.i += 1;
                // \% and \_ keep their backslash (MySQL's rule outside LIKE)
                if matches!(e, b'%' | b'_') {
                    out.push(b'\\');
                }
                out.push(match e {
                    b'0' => 0,
                    b'b' => 8,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'Z' => 26,
                    other => other,
                });
            } else if c == q {
                if self.peek() == Some(q) {
                    out.push(q);
                    self.i += 1;
                } else {
                    break;
                }
            } else {
                out.push(c);
            }
        }
        String::from_utf8(out).map_err(|_| "a string that is not UTF-8".into())
    }

    fn value(&mut self) -> Result<SqlValue, String> {
        self.ws();
        if let Some(q @ (b'\'' | b'"')) = self.peek() {
            return self.string(q).map(SqlValue::Text);
        }
        if self.keyword("NULL") {
            return Ok(SqlValue::Null);
        }
        if self.keyword("_binary") || self.keyword("_utf8mb4") || self.keyword("_utf8") {
            return self.value();
        }
        let start = self.i;
        if self.b[self.i..].starts_with(b"0x") || self.b[self.i..].starts_with(b"0X") {
            self.i += 2;
            while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                self.i += 1;
            }
            let hex = &self.b[start + 2..self.i];
            if !hex.len().is_multiple_of(2) {
                return Err("hex of an odd length".into());
            }
            let bytes: Vec<u8> = hex
                .chunks(2)
                .map(|h| {
                    u8::from_str_radix(std::str::from_utf8(h).unwrap_or("zz"), 16).unwrap_or(0)
                })
                .collect();
            return String::from_utf8(bytes)
                .map(SqlValue::Text)
                .map_err(|_| "hex that is not UTF-8 text".into());
        }
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E'))
        {
            self.i += 1;
        }
        let t = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("");
        if t.is_empty() {
            return Err("expected a value".into());
        }
        if let Ok(n) = t.parse::<i64>() {
            return Ok(SqlValue::Int(n));
        }
        t.parse::<f64>()
            .map(SqlValue::Real)
            .map_err(|_| format!("{t:?} is not a number"))
    }

    /// Skips to just past the next `;` outside quotes.
    fn skip_statement(&mut self) -> Result<(), String> {
        while let Some(c) = self.peek() {
            match c {
                b'\'' | b'"' => {
                    self.string(c)?;
                }
                b'`' => {
                    self.ident()?;
                }
                b';' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => self.i += 1,
            }
        }
        Ok(())
    }

    fn create_table(&mut self, tables: &mut HashMap<String, Table>) -> Result<(), String> {
        self.keyword("IF");
        self.keyword("NOT");
        self.keyword("EXISTS");
        let name = self.ident()?;
        self.expect(b'(')?;
        let mut columns = Vec::new();
        let mut depth = 1;
        let mut item_start = true;
        while depth > 0 {
            self.ws();
            let Some(c) = self.peek() else {
                return Err("CREATE TABLE without its closing )".into());
            };
            if item_start && depth == 1 {
                item_start = false;
                if c == b'`' {
                    columns.push(self.ident()?);
                    continue;
                }
            }
            match c {
                b'(' => depth += 1,
                b')' => depth -= 1,
                b',' if depth == 1 => item_start = true,
                b'\'' | b'"' => {
                    self.string(c)?;
                    continue;
                }
                b'`' => {
                    self.ident()?;
                    continue;
                }
                _ => {}
            }
            self.i += 1;
        }
        self.skip_statement()?;
        let t = tables.entry(name).or_default();
        if t.columns.is_empty() {
            t.columns = columns;
        }
        Ok(())
    }

    fn insert(&mut self, tables: &mut HashMap<String, Table>) -> Result<(), String> {
        let name = self.ident()?;
        self.ws();
        let mut columns = None;
        if self.peek() == Some(b'(') {
            self.i += 1;
            let mut cols = Vec::new();
            loop {
                cols.push(self.ident()?);
                self.ws();
                match self.peek() {
                    Some(b',') => self.i += 1,
                    Some(b')') => {
                        self.i += 1;
                        break;
                    }
                    _ => return Err("a column list without its closing )".into()),
                }
            }
            columns = Some(cols);
        }
        if !self.keyword("VALUES") && !self.keyword("VALUE") {
            return Err("INSERT without VALUES".into());
        }
        // the table is touched only once the whole statement is read
        let known = tables
            .get(&name)
            .map(|t| (t.columns.clone(), t.rows.is_empty()));
        let cols = match (columns, known) {
            (Some(cols), Some((old, no_rows))) => {
                if !old.is_empty() && old != cols && !no_rows {
                    return Err(format!("INSERTs into {name} with other columns"));
                }
                cols
            }
            (Some(cols), None) => cols,
            (None, Some((old, _))) => old,
            (None, None) => Vec::new(),
        };
        let mut rows = Vec::new();
        loop {
            self.expect(b'(')?;
            let mut row = Vec::new();
            loop {
                row.push(self.value()?);
                self.ws();
                match self.peek() {
                    Some(b',') => self.i += 1,
                    Some(b')') => {
                        self.i += 1;
                        break;
                    }
                    _ => return Err("a row without its closing )".into()),
                }
            }
            if !cols.is_empty() && row.len() != cols.len() {
                return Err(format!(
                    "a row of {} values for the {} columns of {name}",
                    row.len(),
                    cols.len()
                ));
            }
            rows.push(row);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b';') => {
                    self.i += 1;
                    break;
                }
                None => return Err("an INSERT without its closing ;".into()),
                _ => return Err("expected , or ; after a row".into()),
            }
        }
        let t = tables.entry(name).or_default();
        t.columns = cols;
        t.rows.extend(rows);
        Ok(())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads a dump.
pub fn parse_dump(text: &[u8]) -> Dump {
    let mut p = P { b: text, i: 0 };
    let mut d = Dump::default();
    loop {
        p.ws();
        if p.peek().is_none() {
            return d;
        }
        let at = p.i;
        let r = if p.keyword("CREATE") {
            p.keyword("TEMPORARY");
            if p.keyword("TABLE") {
                p.create_table(&mut d.tables)
            } else {
                p.skip_statement()
            }
        } else if p.keyword("INSERT") || p.keyword("REPLACE") {
            p.keyword("IGNORE");
            p.keyword("INTO");
            p.insert(&mut d.tables)
        } else {
            p.skip_statement()
        };
        if let Err(e) = r {
            d.problem = Some((at, e));
            return d;
        }
        if p.i == at {
            // no progress: a lone character
            p.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_as_mysqldump_writes_it() {
        let text = br#"-- MySQL dump 10.13
/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40103 SET TIME_ZONE='+00:00' */;
DROP TABLE IF EXISTS `graphs`;
CREATE TABLE `graphs` (
  `id` int(10) unsigned NOT NULL AUTO_INCREMENT,
  `graph_name` varchar(255) COLLATE utf8_bin NOT NULL,
  `number` bigint(20) NOT NULL DEFAULT '0',
  `meta` text,
  PRIMARY KEY (`id`),
  UNIQUE KEY `service_name` (`graph_name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
LOCK TABLES `graphs` WRITE;
INSERT INTO `graphs` VALUES (1,'it\'s a \"g\"\n',-5,NULL),(2,'x;y',1.5e3,'{\"a\":\"\\\\\"}');
UNLOCK TABLES;
INSERT INTO `vrules` (`id`,`time`) VALUES (1,0x3132);
INSERT INTO `graphs` VALUES (3,'cut"#;
        let d = parse_dump(text);
        let g = &d.tables["graphs"];
        assert_eq!(g.columns, ["id", "graph_name", "number", "meta"]);
        assert_eq!(g.rows.len(), 2);
        assert_eq!(g.rows[0][1], SqlValue::Text("it's a \"g\"\n".into()));
        assert_eq!(g.rows[0][2], SqlValue::Int(-5));
        assert_eq!(g.rows[0][3], SqlValue::Null);
        assert_eq!(g.rows[1][2], SqlValue::Real(1500.0));
        assert_eq!(g.rows[1][3], SqlValue::Text(r#"{"a":"\\"}"#.into()));
        assert_eq!(d.tables["vrules"].rows[0][1], SqlValue::Text("12".into()));
        let (at, why) = d.problem.unwrap();
        assert!(
            text[at..].starts_with(b"INSERT INTO `graphs` VALUES (3"),
            "{why}"
        );
        assert!(why.contains("closing quote"), "{why}");
    }
}
