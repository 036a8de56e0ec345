//! Client verbs for people without kubectl: `apply`, `get`, `delete`, `describe`, `wait`, against a
//! running `drydock daemon` (or anything serving the same API), through the kube client.
//!
//! They are thin on purpose: the API is the product, and these verbs do only what kubectl would
//! do with it, with kubectl's spellings (`-n`, `-A`, `-l`, `-o`, `-f`, `--for`, `--timeout`), its
//! output (`physicalcontainer.drydock.dev/web created`, `Error from server (NotFound): ...`) and its
//! exit codes (0 on success, 1 on any error).

use anyhow::{Context as _, Result, bail};
use clap::Args;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::Value;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

mod output;
mod server;

use output::{describe_text, print_table};
use server::{
    JSON, Kind, Kinds, TABLE, connect, connect_with, is_not_found, namespace_for, request_json, split_target,
    url_escape,
};

/// Where to find the daemon.
#[derive(Args, Clone, Debug)]
pub struct Connection {
    /// The client config to use [default: $KUBECONFIG, else the daemon's, in its default state dir].
    #[arg(long, global = true)]
    kubeconfig: Option<PathBuf>,
}

#[derive(Args)]
pub struct ApplyArgs {
    /// Manifest: YAML (one or more documents) or JSON, objects or lists of them.
    #[arg(short = 'f', long = "filename")]
    file: PathBuf,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct GetArgs {
    /// A kind (by name, plural, singular or short name: `lc`, `pc`, `img`, `ns`), optionally
    /// `KIND/NAME`.
    resource: String,
    /// Only this object.
    name: Option<String>,
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Label selector (`app=web,tier!=db`).
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// Output: the table (default), `wide`, `name`, `json` or `yaml`.
    #[arg(short = 'o', long)]
    output: Option<String>,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct DeleteArgs {
    /// `KIND NAME` or `KIND/NAME`.
    resource: Option<String>,
    name: Option<String>,
    /// Delete the objects of a manifest instead.
    #[arg(short = 'f', long = "filename")]
    file: Option<PathBuf>,
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Foreground, Background or Orphan.
    #[arg(long, default_value = "Background")]
    cascade: String,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct DescribeArgs {
    /// `KIND NAME` or `KIND/NAME`.
    resource: String,
    name: Option<String>,
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct WaitArgs {
    /// `KIND/NAME` (or `KIND NAME`).
    resource: String,
    name: Option<String>,
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// `delete`, `condition=NAME[=STATUS]` or `jsonpath={.status.phase}=VALUE`.
    #[arg(long = "for")]
    condition: String,
    /// Give up after this long (`30s`, `2m`).
    #[arg(long, default_value = "30s")]
    timeout: String,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct LogsArgs {
    /// `KIND/NAME` (or `KIND NAME`): `pc/web`, `lc/api`, `img/nginx`.
    resource: String,
    name: Option<String>,
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Keep printing until the source completes (the container exited and its output is
    /// drained, the pull settled) or the object is deleted; wait for a container not yet created.
    #[arg(short = 'f', long)]
    follow: bool,
    /// `stdout` (the default), `stderr` or `system` (drydock's own diagnostics); a logical
    /// container also has `startup_stdout` and `startup_stderr` (its own image's pull output).
    #[arg(long)]
    source: Option<String>,
    /// Prefix each line with its RFC 3339 time.
    #[arg(long)]
    timestamps: bool,
    /// Prefix each line with its number in its stream.
    #[arg(long)]
    line_numbers: bool,
    /// Lines from the end to begin with (-1: all).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    tail: i64,
    /// Only lines newer than this (`10s`, `5m`, `1h`).
    #[arg(long)]
    since: Option<String>,
    /// Stop after this many bytes.
    #[arg(long)]
    limit_bytes: Option<u64>,
    #[command(flatten)]
    connection: Connection,
}

/// Run a verb; errors are printed kubectl's way and exit 1.
fn finish(result: Result<ExitCode>) -> Result<ExitCode> {
    match result {
        Ok(code) => Ok(code),
        Err(error) => {
            match error.downcast_ref::<kube::Error>() {
                Some(kube::Error::Api(status)) => {
                    eprintln!("Error from server ({}): {}", status.reason, status.message);
                }
                _ => eprintln!("error: {error:#}"),
            }
            Ok(ExitCode::from(1))
        }
    }
}

fn block_on<F: std::future::Future<Output = Result<ExitCode>>>(future: F) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("start tokio")?;
    finish(runtime.block_on(future))
}

pub fn apply(args: &ApplyArgs, registry: &drydock_engine::store::Registry) -> Result<ExitCode> {
    block_on(async {
        let objects = crate::manifest::load(&args.file, registry)?;
        let client = connect(&args.connection).await?;
        let kinds = Kinds::discover(&client).await?;
        for object in objects {
            let kind = kinds.by_kind(&object.kind)?;
            let api = kind.api(&client, object.metadata.namespace.as_deref());
            let name = object.metadata.name.clone();
            let mut body = serde_json::to_value(&object)?;
            body["apiVersion"] = Value::String(kind.resource.api_version.clone());
            // What the server assigns is not the client's to send (and the engine's form of it,
            // numbers, is not the API's: a resourceVersion is a string there).
            if let Some(metadata) = body["metadata"].as_object_mut() {
                for assigned in ["uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp"] {
                    metadata.remove(assigned);
                }
            }
            let outcome = match api.get_opt(&name).await? {
                None => {
                    let created: DynamicObject = serde_json::from_value(body)?;
                    api.create(&PostParams::default(), &created).await?;
                    "created"
                }
                Some(existing) => {
                    // A merge patch of what the manifest says: its labels and annotations are
                    // set (others, such as kubectl's last-applied, are left alone) and its spec
                    // replaces the stored one's fields.
                    let mut metadata = serde_json::Map::new();
                    for field in ["labels", "annotations"] {
                        if let Some(value) = body["metadata"].get(field) {
                            metadata.insert(field.to_string(), value.clone());
                        }
                    }
                    let patch = serde_json::json!({
                        "metadata": metadata,
                        "spec": body.get("spec").cloned().unwrap_or(Value::Null),
                    });
                    let patched = api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
                    if patched.metadata.resource_version == existing.metadata.resource_version {
                        "unchanged"
                    } else {
                        "configured"
                    }
                }
            };
            println!("{}/{name} {outcome}", kind.qualified());
        }
        Ok(ExitCode::SUCCESS)
    })
}

pub fn get(args: &GetArgs) -> Result<ExitCode> {
    block_on(async {
        let client = connect(&args.connection).await?;
        let kinds = Kinds::discover(&client).await?;
        let (resource, name) = split_target(&args.resource, args.name.as_deref());
        let kind = kinds.find(resource)?;
        let namespace = namespace_for(kind, args.namespace.as_deref(), args.all_namespaces);
        let mut path = kind.path(namespace.as_deref());
        if let Some(name) = &name {
            path = format!("{path}/{name}");
        }
        if let Some(selector) = &args.selector {
            path = format!("{path}?labelSelector={}", url_escape(selector));
        }
        match args.output.as_deref() {
            None | Some("wide") => {
                let table = request_json(&client, &path, TABLE).await?;
                print_table(&table, args.all_namespaces && kind.namespaced);
            }
            Some("json") => println!("{}", serde_json::to_string_pretty(&request_json(&client, &path, JSON).await?)?),
            Some("yaml") => print!("{}", serde_yaml_ng::to_string(&request_json(&client, &path, JSON).await?)?),
            Some("name") => {
                let found = request_json(&client, &path, JSON).await?;
                let items = found.get("items").and_then(Value::as_array).cloned().unwrap_or_else(|| vec![found]);
                for item in items {
                    println!("{}/{}", kind.qualified(), item["metadata"]["name"].as_str().unwrap_or_default());
                }
            }
            Some(other) => bail!("unknown output format {other:?}: use wide, name, json or yaml"),
        }
        Ok(ExitCode::SUCCESS)
    })
}

pub fn delete(args: &DeleteArgs, registry: &drydock_engine::store::Registry) -> Result<ExitCode> {
    block_on(async {
        let client = connect(&args.connection).await?;
        let kinds = Kinds::discover(&client).await?;
        let propagation = match args.cascade.to_lowercase().as_str() {
            "background" | "true" => kube::api::PropagationPolicy::Background,
            "foreground" => kube::api::PropagationPolicy::Foreground,
            "orphan" | "false" => kube::api::PropagationPolicy::Orphan,
            other => bail!("--cascade {other:?}: use Background, Foreground or Orphan"),
        };
        let params = DeleteParams { propagation_policy: Some(propagation), ..DeleteParams::default() };
        let targets: Vec<(&Kind, Option<String>, String)> = match (&args.file, &args.resource) {
            (Some(file), None) => crate::manifest::load(file, registry)?
                .into_iter()
                .rev()
                .map(|o| {
                    Ok((
                        kinds.by_kind(&o.kind)?,
                        o.metadata.namespace.as_deref().map(str::to_string),
                        o.metadata.name.to_string(),
                    ))
                })
                .collect::<Result<_>>()?,
            (None, Some(resource)) => {
                let (resource, name) = split_target(resource, args.name.as_deref());
                let kind = kinds.find(resource)?;
                let name = name.context("name the object to delete: KIND NAME or KIND/NAME")?;
                vec![(kind, namespace_for(kind, args.namespace.as_deref(), false), name)]
            }
            _ => bail!("give either -f FILE or KIND NAME"),
        };
        for (kind, namespace, name) in targets {
            kind.api(&client, namespace.as_deref()).delete(&name, &params).await?;
            println!("{}/{name} deleted", kind.qualified());
        }
        Ok(ExitCode::SUCCESS)
    })
}

pub fn describe(args: &DescribeArgs) -> Result<ExitCode> {
    block_on(async {
        let client = connect(&args.connection).await?;
        let kinds = Kinds::discover(&client).await?;
        let (resource, name) = split_target(&args.resource, args.name.as_deref());
        let kind = kinds.find(resource)?;
        let name = name.context("name the object to describe: KIND NAME or KIND/NAME")?;
        let namespace = namespace_for(kind, args.namespace.as_deref(), false);
        let object = request_json(&client, &format!("{}/{name}", kind.path(namespace.as_deref())), JSON).await?;
        print!("{}", describe_text(&object));
        Ok(ExitCode::SUCCESS)
    })
}

pub fn wait(args: &WaitArgs) -> Result<ExitCode> {
    block_on(async {
        let client = connect(&args.connection).await?;
        let kinds = Kinds::discover(&client).await?;
        let (resource, name) = split_target(&args.resource, args.name.as_deref());
        let kind = kinds.find(resource)?;
        let name = name.context("name the object to wait for: KIND/NAME")?;
        let namespace = namespace_for(kind, args.namespace.as_deref(), false);
        let condition = WaitFor::parse(&args.condition)?;
        let timeout = parse_duration("--timeout", &args.timeout)?;
        let path = format!("{}/{name}", kind.path(namespace.as_deref()));
        let started = Instant::now();
        loop {
            let found = match request_json(&client, &path, JSON).await {
                Ok(object) => Some(object),
                Err(error) if is_not_found(&error) => None,
                Err(error) => return Err(error),
            };
            if condition.holds(found.as_ref()) {
                println!("{}/{name} condition met", kind.qualified());
                return Ok(ExitCode::SUCCESS);
            }
            if started.elapsed() >= timeout {
                bail!("timed out waiting for the condition on {}/{name}", kind.qualified());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
}

/// What `wait --for` waits for.
enum WaitFor {
    Delete,
    Condition { name: String, status: String },
    JsonPath { path: Vec<String>, value: String },
}

impl WaitFor {
    fn parse(text: &str) -> Result<WaitFor> {
        if text == "delete" {
            return Ok(WaitFor::Delete);
        }
        if let Some(condition) = text.strip_prefix("condition=") {
            let (name, status) = condition.split_once('=').unwrap_or((condition, "True"));
            return Ok(WaitFor::Condition { name: name.to_string(), status: status.to_string() });
        }
        if let Some(rest) = text.strip_prefix("jsonpath=") {
            let (path, value) = rest.rsplit_once('=').context("--for=jsonpath={.path}=VALUE needs a value")?;
            let path = path.trim().trim_matches('\'').trim_start_matches('{').trim_end_matches('}');
            let path: Vec<String> = path.trim_start_matches('.').split('.').map(str::to_string).collect();
            return Ok(WaitFor::JsonPath { path, value: value.trim_matches('\'').to_string() });
        }
        bail!("--for={text:?}: use delete, condition=NAME[=STATUS] or jsonpath={{.path}}=VALUE")
    }

    fn holds(&self, object: Option<&Value>) -> bool {
        match (self, object) {
            (WaitFor::Delete, found) => found.is_none(),
            (_, None) => false,
            (WaitFor::Condition { name, status }, Some(object)) => object["status"]["conditions"]
                .as_array()
                .is_some_and(|all| all.iter().any(|c| c["type"] == name.as_str() && c["status"] == status.as_str())),
            (WaitFor::JsonPath { path, value }, Some(object)) => {
                let found = path.iter().try_fold(object, |v, key| v.get(key));
                found.is_some_and(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string) == *value)
            }
        }
    }
}

/// `30s`, `2m`, `1h`, `500ms` (a bare number: seconds), as the value of `flag`.
fn parse_duration(flag: &str, text: &str) -> Result<Duration> {
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u64 = number.parse().with_context(|| format!("{flag} {text:?}: want e.g. 30s, 2m or 1h"))?;
    Ok(match unit {
        "" | "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3_600),
        "ms" => Duration::from_millis(n),
        other => bail!("{flag} {text:?}: unknown unit {other:?} (use ms, s, m or h)"),
    })
}

pub fn logs(args: &LogsArgs) -> Result<ExitCode> {
    block_on(async {
        // A follow may be quiet for long: no read timeout.
        let client = connect_with(&args.connection, |config| config.read_timeout = None).await?;
        let kinds = Kinds::discover(&client).await?;
        let (resource, name) = split_target(&args.resource, args.name.as_deref());
        let kind = kinds.find(resource)?;
        let name = name.context("name the object whose log to print: KIND/NAME")?;
        let namespace = namespace_for(kind, args.namespace.as_deref(), false);
        let mut query = vec![format!("follow={}", args.follow)];
        if let Some(source) = &args.source {
            query.push(format!("source={}", url_escape(source)));
        }
        if args.timestamps {
            query.push("timestamps=true".into());
        }
        if args.line_numbers {
            query.push("lineNumbers=true".into());
        }
        if args.tail >= 0 {
            query.push(format!("tailLines={}", args.tail));
        }
        if let Some(since) = &args.since {
            query.push(format!("sinceSeconds={}", parse_duration("--since", since)?.as_secs().max(1)));
        }
        if let Some(limit) = args.limit_bytes {
            query.push(format!("limitBytes={limit}"));
        }
        let path = format!("{}/{name}/log?{}", kind.path(namespace.as_deref()), query.join("&"));
        let request = http::Request::get(&path).header("Accept", "text/plain").body(Vec::new())?;
        let mut body = client.request_stream(request).await?;
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let read = futures_util::AsyncReadExt::read(&mut body, &mut buffer).await.context("read the log stream")?;
            if read == 0 {
                break;
            }
            let mut stdout = std::io::stdout().lock();
            std::io::Write::write_all(&mut stdout, &buffer[..read]).context("write the log")?;
            std::io::Write::flush(&mut stdout).context("write the log")?;
        }
        Ok(ExitCode::SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn wait_conditions_parse_and_hold() {
        let running =
            serde_json::json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(WaitFor::parse("jsonpath={.status.phase}=Running").unwrap().holds(Some(&running)));
        assert!(!WaitFor::parse("jsonpath='{.status.phase}'=Exited").unwrap().holds(Some(&running)));
        assert!(WaitFor::parse("condition=Ready").unwrap().holds(Some(&running)));
        assert!(!WaitFor::parse("condition=Ready=False").unwrap().holds(Some(&running)));
        assert!(WaitFor::parse("delete").unwrap().holds(None));
        assert!(WaitFor::parse("bogus").is_err());
        assert_eq!(parse_duration("--timeout", "2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("--since", "1h").unwrap(), Duration::from_secs(3_600));
        assert!(parse_duration("--timeout", "soon").is_err());
    }
}
