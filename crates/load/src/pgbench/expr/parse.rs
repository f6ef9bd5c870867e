//! The expression language's lexer and Pratt parser (pgbench's
//! `exprscan.l` and `exprparse.y`: its tokens, precedence and messages).

use std::fmt;

use super::{Arity, Expr, FUNCTIONS, Func, Value, format_g15};

/// An expression that does not parse: the message (pgbench's wording,
/// with what was expected) and the character offset where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// isobench's message: pgbench's, with what was expected.
    pub message: String,
    /// pgbench's words alone (`syntax error`, `unexpected function
    /// name`), and what it puts in parentheses after them (the name).
    pub head: String,
    pub more: Option<String>,
    offset: usize,
}

impl ParseError {
    /// An error `head (more)` at `offset`, with isobench's `message`.
    fn new(head: &str, more: Option<&str>, message: String, offset: usize) -> Self {
        ParseError {
            message,
            head: head.into(),
            more: more.map(str::to_string),
            offset,
        }
    }

    /// pgbench's `head (more)` as the whole message.
    fn plain(head: &str, more: &str, offset: usize) -> Self {
        ParseError::new(head, Some(more), format!("{head} ({more})"), offset)
    }
}

impl ParseError {
    /// Characters from the start of the expression to the offending text.
    pub fn offset(&self) -> usize {
        self.offset
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    /// 9223372036854775808: legal only after a unary minus.
    MaxIntPlusOne,
    Double(f64),
    Var(String),
    Ident(String),
    Null,
    Bool(bool),
    And,
    Or,
    Not,
    Is,
    IsNull,
    NotNull,
    Case,
    When,
    Then,
    Else,
    End,
    /// An operator or punctuation: `+ - * / % ( ) , = <> <= >= < > << >> | & # ~`
    /// (`!=` is `<>`).
    Op(&'static str),
    Eof,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Eof => "end of expression".into(),
            Tok::Int(i) => format!("\"{i}\""),
            Tok::MaxIntPlusOne => "\"9223372036854775808\"".into(),
            Tok::Double(d) => format!("\"{}\"", format_g15(*d)),
            Tok::Var(v) => format!("\":{v}\""),
            Tok::Ident(i) => format!("\"{i}\""),
            Tok::Op(o) => format!("\"{o}\""),
            Tok::Null => "NULL".into(),
            Tok::Bool(b) => b.to_string().to_uppercase(),
            Tok::And => "AND".into(),
            Tok::Or => "OR".into(),
            Tok::Not => "NOT".into(),
            Tok::Is => "IS".into(),
            Tok::IsNull => "ISNULL".into(),
            Tok::NotNull => "NOTNULL".into(),
            Tok::Case => "CASE".into(),
            Tok::When => "WHEN".into(),
            Tok::Then => "THEN".into(),
            Tok::Else => "ELSE".into(),
            Tok::End => "END".into(),
        }
    }
}

/// A token and the character offset where it starts.
type Spanned = (Tok, usize);

fn is_alpha(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || !c.is_ascii()
}

fn is_alnum(c: char) -> bool {
    is_alpha(c) || c.is_ascii_digit()
}

/// Splits an expression into tokens (pgbench's `exprscan.l`).
fn lex(text: &str) -> Result<Vec<Spanned>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |head: &str, more: &str, offset: usize| ParseError::plain(head, more, offset);
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        // Whitespace and `\` line continuations.
        if matches!(c, ' ' | '\t' | '\r' | '\n' | '\x0b' | '\x0c') {
            i += 1;
            continue;
        }
        if c == '\\' {
            let mut j = i + 1;
            if chars.get(j) == Some(&'\r') {
                j += 1;
            }
            if chars.get(j) == Some(&'\n') {
                i = j + 1;
                continue;
            }
            return Err(err("unexpected character", "\\", i));
        }
        if c == ':' {
            let mut j = i + 1;
            while j < chars.len() && is_alnum(chars[j]) {
                j += 1;
            }
            if j == i + 1 {
                return Err(ParseError::new(
                    "unexpected character",
                    Some(":"),
                    "unexpected character (:): a variable is :name".into(),
                    i,
                ));
            }
            out.push((Tok::Var(chars[i + 1..j].iter().collect()), start));
            i = j;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let (tok, j) = number(&chars, i)?;
            out.push((tok, start));
            i = j;
            continue;
        }
        if is_alpha(c) {
            let mut j = i;
            while j < chars.len() && is_alnum(chars[j]) {
                j += 1;
            }
            out.push((word(chars[i..j].iter().collect()), start));
            i = j;
            continue;
        }
        let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        let op2 = match two.as_str() {
            "<>" | "!=" => Some("<>"),
            "<=" => Some("<="),
            ">=" => Some(">="),
            "<<" => Some("<<"),
            ">>" => Some(">>"),
            _ => None,
        };
        if let Some(op) = op2 {
            out.push((Tok::Op(op), start));
            i += 2;
            continue;
        }
        let op1 = match c {
            '+' => "+",
            '-' => "-",
            '*' => "*",
            '/' => "/",
            '%' => "%",
            '(' => "(",
            ')' => ")",
            ',' => ",",
            '=' => "=",
            '<' => "<",
            '>' => ">",
            '|' => "|",
            '&' => "&",
            '#' => "#",
            '~' => "~",
            _ => return Err(err("unexpected character", &c.to_string(), i)),
        };
        out.push((Tok::Op(op1), start));
        i += 1;
    }
    out.push((Tok::Eof, chars.len()));
    Ok(out)
}

/// The number starting at `chars[i]`: an integer or a double (pgbench's
/// `exprscan.l` rules), and the index after it.
fn number(chars: &[char], i: usize) -> Result<(Tok, usize), ParseError> {
    let err = |head: &str, more: &str, offset: usize| ParseError::plain(head, more, offset);
    let digits = |mut j: usize| {
        while j < chars.len() && chars[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let mut j = digits(i);
    let mut double = false;
    if chars.get(j) == Some(&'.') {
        double = true;
        j = digits(j + 1);
    }
    if matches!(chars.get(j), Some('e' | 'E')) {
        let mut k = j + 1;
        if matches!(chars.get(k), Some('+' | '-')) {
            k += 1;
        }
        if chars.get(k).is_some_and(char::is_ascii_digit) {
            double = true;
            j = digits(k);
        }
    }
    let lit: String = chars[i..j].iter().collect();
    let tok = if !double {
        if lit == "9223372036854775808" {
            Tok::MaxIntPlusOne
        } else {
            Tok::Int(
                lit.parse()
                    .map_err(|_| err("bigint constant overflow", &lit, i))?,
            )
        }
    } else {
        let d: f64 = lit.parse().expect("a decimal literal");
        let nonzero = lit
            .split(['e', 'E'])
            .next()
            .is_some_and(|m| m.bytes().any(|b| (b'1'..=b'9').contains(&b)));
        if d.is_infinite() || (d == 0.0 && nonzero) {
            return Err(err("double constant overflow", &lit, i));
        }
        Tok::Double(d)
    };
    Ok((tok, j))
}

/// A keyword, or else an identifier (a function name).
fn word(word: String) -> Tok {
    match word.to_ascii_lowercase().as_str() {
        "and" => Tok::And,
        "or" => Tok::Or,
        "not" => Tok::Not,
        "is" => Tok::Is,
        "isnull" => Tok::IsNull,
        "notnull" => Tok::NotNull,
        "case" => Tok::Case,
        "when" => Tok::When,
        "then" => Tok::Then,
        "else" => Tok::Else,
        "end" => Tok::End,
        "null" => Tok::Null,
        "true" => Tok::Bool(true),
        "false" => Tok::Bool(false),
        _ => Tok::Ident(word),
    }
}

// Binding powers, lowest first (exprparse.y's precedence declarations).
const BP_OR: u8 = 1;
const BP_AND: u8 = 2;
const BP_NOT: u8 = 3;
const BP_IS: u8 = 4;
const BP_CMP: u8 = 5;
const BP_BIT: u8 = 6;
const BP_ADD: u8 = 7;
const BP_MUL: u8 = 8;
const BP_UNARY: u8 = 9;

struct Parser {
    toks: Vec<Spanned>,
    pos: usize,
    /// Nesting of `expr` calls, bounded so that no input overflows the stack.
    depth: usize,
}

/// Deepest nesting of sub-expressions accepted (pgbench's bison parser
/// stops at 10000 stack entries).
const MAX_DEPTH: usize = 200;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }

    fn at(&self) -> usize {
        self.toks[self.pos].1
    }

    fn bump(&mut self) -> Tok {
        let t = self.toks[self.pos].0.clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn error(&self, expected: &str) -> ParseError {
        ParseError::new(
            "syntax error",
            None,
            format!(
                "syntax error at {}: expected {expected}",
                self.peek().describe()
            ),
            self.at(),
        )
    }

    fn expect(&mut self, tok: Tok, expected: &str) -> Result<(), ParseError> {
        if *self.peek() == tok {
            self.bump();
            Ok(())
        } else {
            Err(self.error(expected))
        }
    }

    /// An expression whose binary operators all bind at least `min`.
    fn expr(&mut self, min: u8) -> Result<Expr, ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ParseError::new(
                "syntax error",
                None,
                format!("expression nested more than {MAX_DEPTH} deep"),
                self.at(),
            ));
        }
        let e = self.expr_inner(min);
        self.depth -= 1;
        e
    }

    fn expr_inner(&mut self, min: u8) -> Result<Expr, ParseError> {
        let mut lhs = self.prefix()?;
        loop {
            let (bp, op) = match self.peek() {
                Tok::Or => (BP_OR, None),
                Tok::And => (BP_AND, None),
                Tok::Is | Tok::IsNull | Tok::NotNull => (BP_IS, None),
                Tok::Op(o) => match *o {
                    "=" => (BP_CMP, Some(Func::Eq)),
                    "<>" => (BP_CMP, Some(Func::Ne)),
                    "<" | ">" => (BP_CMP, Some(Func::Lt)),
                    "<=" | ">=" => (BP_CMP, Some(Func::Le)),
                    "|" => (BP_BIT, Some(Func::BitOr)),
                    "&" => (BP_BIT, Some(Func::BitAnd)),
                    "#" => (BP_BIT, Some(Func::BitXor)),
                    "<<" => (BP_BIT, Some(Func::Shl)),
                    ">>" => (BP_BIT, Some(Func::Shr)),
                    "+" => (BP_ADD, Some(Func::Add)),
                    "-" => (BP_ADD, Some(Func::Sub)),
                    "*" => (BP_MUL, Some(Func::Mul)),
                    "/" => (BP_MUL, Some(Func::Div)),
                    "%" => (BP_MUL, Some(Func::Mod)),
                    _ => break,
                },
                _ => break,
            };
            if bp < min {
                break;
            }
            let tok = self.bump();
            lhs = match tok {
                Tok::Or => Expr::Or(Box::new(lhs), Box::new(self.expr(BP_OR + 1)?)),
                Tok::And => Expr::And(Box::new(lhs), Box::new(self.expr(BP_AND + 1)?)),
                Tok::IsNull => is(lhs, Value::Null),
                Tok::NotNull => not(is(lhs, Value::Null)),
                Tok::Is => {
                    let negate = *self.peek() == Tok::Not;
                    if negate {
                        self.bump();
                    }
                    let v = match self.peek() {
                        Tok::Null => Value::Null,
                        Tok::Bool(b) => Value::Bool(*b),
                        _ => return Err(self.error("NULL, TRUE or FALSE after IS")),
                    };
                    self.bump();
                    if negate { not(is(lhs, v)) } else { is(lhs, v) }
                }
                Tok::Op(o) => {
                    let rhs = self.expr(bp + 1)?;
                    let func = op.expect("binary operator");
                    let e = if matches!(o, ">" | ">=") {
                        Expr::Call(func, vec![rhs, lhs])
                    } else {
                        Expr::Call(func, vec![lhs, rhs])
                    };
                    if bp == BP_CMP
                        && matches!(self.peek(), Tok::Op("=" | "<>" | "<" | ">" | "<=" | ">="))
                    {
                        return Err(self.error(
                            "an operator other than a comparison (comparisons do not chain: use AND)",
                        ));
                    }
                    e
                }
                _ => unreachable!("matched above"),
            };
        }
        Ok(lhs)
    }

    fn prefix(&mut self) -> Result<Expr, ParseError> {
        let (at, save) = (self.at(), self.pos);
        match self.bump() {
            Tok::Int(i) => Ok(Expr::Const(Value::Int(i))),
            Tok::Double(d) => Ok(Expr::Const(Value::Double(d))),
            Tok::Bool(b) => Ok(Expr::Const(Value::Bool(b))),
            Tok::Null => Ok(Expr::Const(Value::Null)),
            Tok::Var(v) => Ok(Expr::Var(v)),
            Tok::MaxIntPlusOne => Err(ParseError::new(
                "syntax error",
                None,
                "syntax error at \"9223372036854775808\": an integer is at most \
                 9223372036854775807 (-9223372036854775808 is allowed)"
                    .into(),
                at,
            )),
            Tok::Op("(") => {
                let e = self.expr(0)?;
                self.expect(Tok::Op(")"), "\")\"")?;
                Ok(e)
            }
            Tok::Op("+") => self.expr(BP_UNARY),
            Tok::Op("-") => {
                if *self.peek() == Tok::MaxIntPlusOne {
                    self.bump();
                    return Ok(Expr::Const(Value::Int(i64::MIN)));
                }
                let e = self.expr(BP_UNARY)?;
                Ok(Expr::Call(Func::Sub, vec![Expr::Const(Value::Int(0)), e]))
            }
            Tok::Op("~") => {
                let e = self.expr(BP_BIT + 1)?;
                Ok(Expr::Call(
                    Func::BitXor,
                    vec![Expr::Const(Value::Int(-1)), e],
                ))
            }
            Tok::Not => Ok(not(self.expr(BP_NOT)?)),
            Tok::Case => self.case(),
            Tok::Ident(name) => self.call(&name, at),
            _ => {
                self.pos = save;
                Err(self.error("an expression"))
            }
        }
    }

    fn case(&mut self) -> Result<Expr, ParseError> {
        let mut arms = Vec::new();
        while *self.peek() == Tok::When {
            self.bump();
            let cond = self.expr(0)?;
            self.expect(Tok::Then, "THEN")?;
            arms.push((cond, self.expr(0)?));
        }
        if arms.is_empty() {
            return Err(self.error("WHEN after CASE"));
        }
        let otherwise = if *self.peek() == Tok::Else {
            self.bump();
            self.expr(0)?
        } else {
            Expr::Const(Value::Null)
        };
        self.expect(Tok::End, "WHEN, ELSE or END")?;
        Ok(Expr::Case(arms, Box::new(otherwise)))
    }

    fn call(&mut self, name: &str, at: usize) -> Result<Expr, ParseError> {
        let lower = name.to_ascii_lowercase();
        let Some(&(fname, func, arity)) = FUNCTIONS.iter().find(|f| f.0 == lower) else {
            return Err(ParseError::plain("unexpected function name", name, at));
        };
        self.expect(Tok::Op("("), &format!("\"(\" after {fname}"))?;
        let mut args = Vec::new();
        if *self.peek() != Tok::Op(")") {
            loop {
                args.push(self.expr(0)?);
                if *self.peek() == Tok::Op(",") {
                    self.bump();
                } else {
                    break;
                }
            }
        }
        self.expect(Tok::Op(")"), "\",\" or \")\"")?;
        let n = args.len();
        let arity_error = |detail: &str| {
            ParseError::new(
                "unexpected number of arguments",
                Some(fname),
                format!("unexpected number of arguments ({fname}): {detail}"),
                at,
            )
        };
        let seed = || Expr::Var("default_seed".into());
        match arity {
            Arity::Exactly(k) if n != k => {
                return Err(arity_error(&format!("it takes {k}, not {n}")));
            }
            Arity::AtLeastOne if n == 0 => {
                return Err(ParseError::plain(
                    "at least one argument expected",
                    fname,
                    at,
                ));
            }
            Arity::Hash if !(1..=2).contains(&n) => {
                return Err(arity_error(&format!("it takes 1 or 2, not {n}")));
            }
            Arity::Hash if n == 1 => args.push(seed()),
            Arity::Permute if !(2..=3).contains(&n) => {
                return Err(arity_error(&format!("it takes 2 or 3, not {n}")));
            }
            Arity::Permute if n == 2 => args.push(seed()),
            _ => {}
        }
        Ok(Expr::Call(func, args))
    }
}

fn is(e: Expr, v: Value) -> Expr {
    Expr::Call(Func::Is, vec![e, Expr::Const(v)])
}

fn not(e: Expr) -> Expr {
    Expr::Call(Func::Not, vec![e])
}

impl Expr {
    /// Parses an expression (the text after `\set name`, `\if`, `\elif`).
    ///
    /// Errors: pgbench's messages (`unexpected function name (foo)`,
    /// `bigint constant overflow (...)`, `unexpected character (@)`, ...)
    /// or `syntax error at "x": expected ...`, with the character offset.
    pub fn parse(text: &str) -> Result<Expr, ParseError> {
        let mut p = Parser {
            toks: lex(text)?,
            pos: 0,
            depth: 0,
        };
        let e = p.expr(0)?;
        if *p.peek() != Tok::Eof {
            return Err(p.error("an operator or the end of the expression"));
        }
        Ok(e)
    }
}
