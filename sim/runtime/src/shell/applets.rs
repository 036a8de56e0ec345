//! What busybox's text applets print, for the forms the model knows: `echo`, `printf`, `seq`,
//! `cat`, and the filters of pipelines `wc`, `head`, `tail`, `grep` (a fixed string), `tr`. Each
//! reads its files or its standard input and returns what it writes to standard output, its
//! messages on standard error and its status.
//!
//! A form outside the model (an option, a conversion or a pattern it does not know) is
//! [`Unmodelled`]: the script then ends with status 2, as if it were a syntax error, instead of
//! printing something Docker would not (so is a `seq` of more than [`SEQ_LIMIT`] numbers).
//! `echo`, `seq` and `cat` keep their older, lenient reading (unknown options are words or
//! ignored).

/// A form of an applet the model does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Unmodelled;

/// What a file path is, for an applet reading it.
pub(super) enum Lookup {
    File(String),
    Dir,
    Missing,
}

/// What an applet did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Ran {
    /// Its standard output, newlines included.
    pub out: String,
    /// Its lines on standard error.
    pub err: Vec<String>,
    pub status: i64,
}

impl Ran {
    fn out(out: String) -> Ran {
        Ran { out, ..Ran::default() }
    }
}

/// Whether the model knows what applet `name` prints (the others print nothing and end 0).
pub(super) fn is_text_applet(name: &str) -> bool {
    matches!(name, "echo" | "printf" | "seq" | "cat" | "wc" | "head" | "tail" | "grep" | "tr")
}

/// Whether `name` reads its standard input when given no file (a pipeline's reader).
pub(super) fn reads_input(name: &str, args: &[String]) -> bool {
    match name {
        "cat" => args.is_empty() || args.iter().any(|a| a == "-"),
        "wc" | "head" | "tail" => !args.iter().any(|a| !a.starts_with('-') && !a.bytes().all(|b| b.is_ascii_digit())),
        "grep" => operands(args).len() < 2,
        "tr" => true,
        _ => false,
    }
}

/// The arguments that are not options.
fn operands(args: &[String]) -> Vec<&String> {
    args.iter().filter(|a| !a.starts_with('-') || a.as_str() == "-").collect()
}

/// Run text applet `name`; `sh`: it runs as the shell's builtin (its messages say `sh:`).
pub(super) fn run(
    name: &str,
    args: &[String],
    input: &str,
    read: &dyn Fn(&str) -> Lookup,
    sh: bool,
) -> Result<Ran, Unmodelled> {
    match name {
        "echo" => Ok(Ran::out(echo(args))),
        "printf" => printf(args, if sh { "sh" } else { "printf" }),
        "seq" => seq(args),
        "cat" => Ok(cat(args, input, read)),
        "wc" => wc(args, input, read),
        "head" | "tail" => head_or_tail(name, args, input, read),
        "grep" => grep(args, input, read),
        "tr" => tr(args, input),
        _ => Err(Unmodelled),
    }
}

/// busybox `echo`: its arguments, space-separated, and a newline; leading options of `n`, `e`
/// and `E` (`-n`: no newline, `-e`: backslash escapes).
fn echo(args: &[String]) -> String {
    let is_option = |a: &str| a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| "neE".contains(c));
    let options: Vec<&str> = args.iter().map(String::as_str).take_while(|a| is_option(a)).collect();
    let newline = !options.iter().any(|o| o.contains('n'));
    let escapes = options.iter().rev().flat_map(|o| o.chars().rev()).find(|c| *c == 'e' || *c == 'E') == Some('e');
    let mut text = args[options.len()..].join(" ");
    if escapes {
        text = unescape(&text).unwrap_or(text);
    }
    if newline {
        text.push('\n');
    }
    text
}

/// `\n`, `\t`, `\\` and friends; `None` for an escape the model does not know.
fn unescape(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some('\'') => out.push('\''),
            None => out.push('\\'),
            Some(_) => return None,
        }
    }
    Some(out)
}

/// busybox `printf FORMAT [ARG]...`: `%s`, `%d`/`%i`, `%%` and the escapes of [`unescape`]; the
/// format again while arguments are left (if it converts any). A missing argument is empty; a
/// `%d` of something not a number prints 0, says `invalid number 'X'` and makes the status 1.
fn printf(args: &[String], name: &str) -> Result<Ran, Unmodelled> {
    let Some((format, mut rest)) = args.split_first() else {
        return Ok(Ran {
            err: vec![format!("{name}: usage: printf FORMAT [ARGUMENT...]")],
            status: 2,
            ..Ran::default()
        });
    };
    let format = unescape(format).ok_or(Unmodelled)?;
    let mut ran = Ran::default();
    loop {
        let mut converted = false;
        let mut chars = format.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                ran.out.push(c);
                continue;
            }
            let conversion = chars.next().ok_or(Unmodelled)?;
            if conversion == '%' {
                ran.out.push('%');
                continue;
            }
            converted = true;
            let arg = rest.first().map(String::as_str).unwrap_or("");
            rest = rest.get(1..).unwrap_or_default();
            match conversion {
                's' => ran.out.push_str(arg),
                'd' | 'i' => match arg.trim_start().parse::<i64>() {
                    Ok(n) => ran.out.push_str(&n.to_string()),
                    Err(_) => {
                        ran.out.push('0');
                        ran.err.push(format!("{name}: invalid number '{arg}'"));
                        ran.status = 1;
                    }
                },
                _ => return Err(Unmodelled),
            }
        }
        if !converted || rest.is_empty() {
            return Ok(ran);
        }
    }
}

/// The most numbers the model's `seq` prints (a pipe may count them all).
const SEQ_LIMIT: i64 = 100_000;

/// busybox `seq [FIRST] LAST`: one number a line. Status 1 for what it cannot parse; more than
/// [`SEQ_LIMIT`] numbers are beyond the model.
fn seq(args: &[String]) -> Result<Ran, Unmodelled> {
    let numbers: Option<Vec<i64>> = args.iter().map(|a| a.parse().ok()).collect();
    let (first, last) = match numbers.as_deref() {
        Some([last]) => (1, *last),
        Some([first, last]) => (*first, *last),
        _ => return Ok(Ran { status: 1, ..Ran::default() }),
    };
    if last.saturating_sub(first) >= SEQ_LIMIT {
        return Err(Unmodelled);
    }
    Ok(Ran::out((first..=last).map(|n| format!("{n}\n")).collect()))
}

/// busybox `cat [FILE]...`: each file in order (`-` or none: standard input). A missing file
/// or a directory is a message on standard error and status 1.
fn cat(args: &[String], input: &str, read: &dyn Fn(&str) -> Lookup) -> Ran {
    let mut ran = Ran::default();
    if args.is_empty() {
        ran.out.push_str(input);
    }
    for arg in args {
        if arg == "-" {
            ran.out.push_str(input);
            continue;
        }
        match read(arg) {
            Lookup::File(contents) => ran.out.push_str(&contents),
            Lookup::Dir => {
                ran.err.push("cat: read error: Is a directory".into());
                ran.status = 1;
            }
            Lookup::Missing => {
                ran.err.push(format!("cat: can't open '{arg}': No such file or directory"));
                ran.status = 1;
            }
        }
    }
    ran
}

/// The text a filter reads: its one file operand, or its standard input. `Err` with the
/// applet's message and status for a file it cannot read.
fn source(name: &str, file: Option<&String>, input: &str, read: &dyn Fn(&str) -> Lookup) -> Result<String, Ran> {
    let Some(file) = file.filter(|f| f.as_str() != "-") else { return Ok(input.to_string()) };
    let status = if name == "grep" { 2 } else { 1 };
    let failed = |why: &str| Ran { err: vec![format!("{name}: {file}: {why}")], status, ..Ran::default() };
    match read(file) {
        Lookup::File(contents) => Ok(contents),
        Lookup::Dir => Err(failed("Is a directory")),
        Lookup::Missing => Err(failed("No such file or directory")),
    }
}

/// Lines of `text`, a last one without its newline included.
fn lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// busybox `wc [-l|-w|-c] [FILE]`: one count alone, or lines, words and bytes in columns of 9;
/// with a file, its name after.
fn wc(args: &[String], input: &str, read: &dyn Fn(&str) -> Lookup) -> Result<Ran, Unmodelled> {
    let (options, files): (Vec<&String>, Vec<&String>) = args.iter().partition(|a| a.starts_with('-') && a.len() > 1);
    if options.len() > 1 || files.len() > 1 {
        return Err(Unmodelled);
    }
    let text = match source("wc", files.first().copied(), input, read) {
        Ok(text) => text,
        Err(ran) => return Ok(ran),
    };
    let counts = [text.matches('\n').count(), text.split_ascii_whitespace().count(), text.len()];
    let mut line = match options.first().map(|o| o.as_str()) {
        Some("-l") => counts[0].to_string(),
        Some("-w") => counts[1].to_string(),
        Some("-c") => counts[2].to_string(),
        Some(_) => return Err(Unmodelled),
        None => counts.iter().map(|n| format!("{n:>9}")).collect::<Vec<_>>().join(" "),
    };
    if let Some(file) = files.first() {
        line = format!("{line} {file}");
    }
    Ok(Ran::out(line + "\n"))
}

/// busybox `head`/`tail` `[-n N | -N] [FILE]`: the first (last) N lines, 10 by default.
fn head_or_tail(name: &str, args: &[String], input: &str, read: &dyn Fn(&str) -> Lookup) -> Result<Ran, Unmodelled> {
    let mut count = 10usize;
    let mut file = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "-n" {
            count = args.next().and_then(|n| n.parse().ok()).ok_or(Unmodelled)?;
        } else if let Some(n) = arg.strip_prefix("-n").or_else(|| arg.strip_prefix('-')).filter(|n| !n.is_empty()) {
            count = n.parse().map_err(|_| Unmodelled)?;
        } else if file.replace(arg).is_some() {
            return Err(Unmodelled);
        }
    }
    let text = match source(name, file, input, read) {
        Ok(text) => text,
        Err(ran) => return Ok(ran),
    };
    let lines = lines(&text);
    let kept = match name {
        "head" => &lines[..count.min(lines.len())],
        _ => &lines[lines.len().saturating_sub(count)..],
    };
    Ok(Ran::out(kept.concat()))
}

/// busybox `grep [-v] [-c] [-q] PATTERN [FILE]` for a pattern without regular-expression
/// characters (a fixed string): the lines holding it (`-v`: not), `-c` their count, `-q`
/// nothing. Status 0 when a line was selected, 1 when none, 2 for a file it cannot read.
fn grep(args: &[String], input: &str, read: &dyn Fn(&str) -> Lookup) -> Result<Ran, Unmodelled> {
    let (mut invert, mut count, mut quiet) = (false, false, false);
    let mut operands = Vec::new();
    for arg in args {
        match arg.strip_prefix('-').filter(|o| !o.is_empty()) {
            Some(options) => {
                for option in options.chars() {
                    match option {
                        'v' => invert = true,
                        'c' => count = true,
                        'q' => quiet = true,
                        _ => return Err(Unmodelled),
                    }
                }
            }
            None => operands.push(arg),
        }
    }
    let (pattern, file) = match operands.as_slice() {
        [pattern] => (*pattern, None),
        [pattern, file] => (*pattern, Some(*file)),
        _ => return Err(Unmodelled),
    };
    if pattern.chars().any(|c| ".[]*^$\\".contains(c)) {
        return Err(Unmodelled);
    }
    let text = match source("grep", file, input, read) {
        Ok(text) => text,
        Err(ran) => return Ok(ran),
    };
    let selected: Vec<&str> =
        lines(&text).into_iter().filter(|l| l.trim_end_matches('\n').contains(pattern.as_str()) != invert).collect();
    let status = i64::from(selected.is_empty());
    let out = match (quiet, count) {
        (true, _) => String::new(),
        (false, true) => format!("{}\n", selected.len()),
        (false, false) => {
            selected.iter().map(|l| if l.ends_with('\n') { l.to_string() } else { format!("{l}\n") }).collect()
        }
    };
    Ok(Ran { out, err: Vec::new(), status })
}

/// busybox `tr SET1 SET2` (the last of SET2 repeated to SET1's length) and `tr -d SET1`, sets
/// of characters and ranges `a-z`.
fn tr(args: &[String], input: &str) -> Result<Ran, Unmodelled> {
    let out = match args {
        [d, set] if d == "-d" => {
            let set = expand_set(set)?;
            input.chars().filter(|c| !set.contains(c)).collect()
        }
        [from, to] if !from.starts_with('-') => {
            let (from, to) = (expand_set(from)?, expand_set(to)?);
            let last = *to.last().ok_or(Unmodelled)?;
            input
                .chars()
                .map(|c| match from.iter().rposition(|f| *f == c) {
                    Some(i) => to.get(i).copied().unwrap_or(last),
                    None => c,
                })
                .collect()
        }
        _ => return Err(Unmodelled),
    };
    Ok(Ran::out(out))
}

/// `a-z0` -> its characters; classes (`[:upper:]`) and escapes are beyond the model.
fn expand_set(set: &str) -> Result<Vec<char>, Unmodelled> {
    if set.contains('[') || set.contains('\\') {
        return Err(Unmodelled);
    }
    let chars: Vec<char> = set.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if i + 2 < chars.len() && chars[i + 1] == '-' && chars[i] <= chars[i + 2] {
            out.extend(chars[i]..=chars[i + 2]);
            i += 3;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(name: &str, args: &[&str], input: &str) -> Result<Ran, Unmodelled> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let read = |p: &str| match p {
            "/f" => Lookup::File("a\nb b\n".into()),
            "/etc" => Lookup::Dir,
            _ => Lookup::Missing,
        };
        run(name, &args, input, &read, true)
    }

    fn out(name: &str, args: &[&str], input: &str) -> String {
        ran(name, args, input).expect("modelled").out
    }

    /// Each expectation as Docker 20.10's busybox printed it.
    #[test]
    fn printf_reuses_its_format_and_complains_of_bad_numbers() {
        assert_eq!(out("printf", &["%s-%d|\\n", "a", "1", "b", "2"], ""), "a-1|\nb-2|\n");
        let missing = ran("printf", &["%s-%d|\\n", "c"], "").expect("modelled");
        assert_eq!((missing.out.as_str(), missing.status), ("c-0|\n", 1));
        assert_eq!(missing.err, ["sh: invalid number ''"]);
        assert_eq!(out("printf", &["x\\ty%%\\n"], ""), "x\ty%\n");
        assert_eq!(out("printf", &["%d|\\n", "-7", " 3"], ""), "-7|\n3|\n");
        assert_eq!(out("printf", &["%s %s\\n", "a"], ""), "a \n");
        assert_eq!(out("printf", &["abc", "ignored"], ""), "abc");
        assert_eq!(ran("printf", &[], "").expect("usage").status, 2);
        assert_eq!(ran("printf", &["%5s", "x"], ""), Err(Unmodelled));
    }

    #[test]
    fn echo_options() {
        assert_eq!(out("echo", &["-n", "a", "b"], ""), "a b");
        assert_eq!(out("echo", &["-e", "a\\tb"], ""), "a\tb\n");
        assert_eq!(out("echo", &["a\\tb", "-n"], ""), "a\\tb -n\n");
    }

    #[test]
    fn filters() {
        assert_eq!(out("wc", &["-l"], "a b\nc"), "1\n");
        assert_eq!(out("wc", &[], "a b\nc\n"), "        2         3         6\n");
        assert_eq!(out("wc", &["-l", "/f"], ""), "2 /f\n");
        assert_eq!(out("head", &["-n", "2"], "1\n2\n3\n"), "1\n2\n");
        assert_eq!(out("head", &["-1", "/f"], ""), "a\n");
        assert_eq!(out("tail", &["-n", "1"], "1\n2\n3"), "3");
        assert_eq!(out("grep", &["1"], "1\n2\n10\n"), "1\n10\n");
        assert_eq!(ran("grep", &["x"], "1\n").expect("modelled").status, 1);
        assert_eq!(out("grep", &["-c", "b"], "abc\nb\nz\n"), "2\n");
        assert_eq!(out("grep", &["-v", "b", "/f"], ""), "a\n");
        assert_eq!(ran("grep", &["a.c"], ""), Err(Unmodelled));
        assert_eq!(out("seq", &["99998", "100000"], ""), "99998\n99999\n100000\n");
        assert_eq!(ran("seq", &["0", "100000"], ""), Err(Unmodelled));
        assert_eq!(out("tr", &["a-z", "A-Z"], "hello\n"), "HELLO\n");
        assert_eq!(out("tr", &["-d", "l"], "hello\n"), "heo\n");
        assert_eq!(out("tr", &[":", " "], "a:b\n"), "a b\n");
        assert_eq!(out("cat", &[], "in\n"), "in\n");
        let missing = ran("cat", &["/nope", "/etc"], "").expect("modelled");
        assert_eq!(
            missing.err,
            ["cat: can't open '/nope': No such file or directory", "cat: read error: Is a directory"]
        );
    }
}
