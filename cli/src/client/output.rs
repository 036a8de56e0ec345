//! What the client verbs print, as kubectl prints it: a server-side `Table` with upper-case
//! headers and padded columns, and the `describe` text.

use serde_json::Value;

/// A `Table` as kubectl prints it: upper-case headers, columns padded to their widest cell.
pub(super) fn print_table(table: &Value, with_namespace: bool) {
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["priority"].as_i64().unwrap_or(0) == 0)
        .filter_map(|c| c["name"].as_str())
        .collect();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header: Vec<String> = columns.iter().map(|c| c.to_uppercase()).collect();
    if with_namespace {
        header.insert(0, "NAMESPACE".into());
    }
    for row in table["rows"].as_array().into_iter().flatten() {
        let mut cells: Vec<String> = row["cells"]
            .as_array()
            .into_iter()
            .flatten()
            .take(columns.len())
            .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_string))
            .map(|c| if c == "null" { "<none>".to_string() } else { c })
            .collect();
        if with_namespace {
            cells.insert(0, row["object"]["metadata"]["namespace"].as_str().unwrap_or_default().to_string());
        }
        rows.push(cells);
    }
    if rows.is_empty() {
        eprintln!("No resources found");
        return;
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r.get(i).map_or(0, String::len)).chain([header[i].len()]).max().unwrap_or(0))
        .collect();
    for line in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> =
            line.iter().enumerate().map(|(i, c)| format!("{c:<width$}", width = widths[i])).collect();
        println!("{}", cells.join("   ").trim_end());
    }
}

/// The `describe` text: identity, labels and annotations, spec, status and conditions.
pub(super) fn describe_text(object: &Value) -> String {
    let meta = &object["metadata"];
    let mut out = String::new();
    let line = |out: &mut String, key: &str, value: &str| out.push_str(&format!("{key:<14}{value}\n"));
    line(&mut out, "Name:", meta["name"].as_str().unwrap_or_default());
    if let Some(ns) = meta["namespace"].as_str() {
        line(&mut out, "Namespace:", ns);
    }
    line(&mut out, "Kind:", object["kind"].as_str().unwrap_or_default());
    line(&mut out, "API Version:", object["apiVersion"].as_str().unwrap_or_default());
    line(&mut out, "UID:", meta["uid"].as_str().unwrap_or_default());
    line(&mut out, "Created:", meta["creationTimestamp"].as_str().unwrap_or_default());
    for (title, field) in [("Labels:", "labels"), ("Annotations:", "annotations")] {
        let pairs: Vec<String> = meta[field]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect();
        line(&mut out, title, if pairs.is_empty() { "<none>" } else { "" });
        for pair in pairs {
            out.push_str(&format!("              {pair}\n"));
        }
    }
    if let Some(finalizers) = meta["finalizers"].as_array().filter(|f| !f.is_empty()) {
        let names: Vec<&str> = finalizers.iter().filter_map(Value::as_str).collect();
        line(&mut out, "Finalizers:", &names.join(", "));
    }
    for (title, field) in [("Spec:", "spec"), ("Status:", "status")] {
        out.push_str(title);
        out.push('\n');
        let mut body = object[field].clone();
        if let Some(map) = body.as_object_mut() {
            map.remove("conditions");
        }
        for text in serde_yaml_ng::to_string(&body).unwrap_or_default().lines() {
            out.push_str(&format!("  {text}\n"));
        }
    }
    if let Some(conditions) = object["status"]["conditions"].as_array().filter(|c| !c.is_empty()) {
        out.push_str("Conditions:\n  Type          Status  Reason          Message\n");
        for c in conditions {
            out.push_str(&format!(
                "  {:<13} {:<7} {:<15} {}\n",
                c["type"].as_str().unwrap_or_default(),
                c["status"].as_str().unwrap_or_default(),
                c["reason"].as_str().unwrap_or_default(),
                c["message"].as_str().unwrap_or_default()
            ));
        }
    }
    out
}
