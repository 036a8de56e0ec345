//! Client verbs for people without kubectl: `apply`, `get`, `delete`, `describe`, `wait`, against a
//! running `drydock daemon` (or anything serving the same API), through the kube client.
//!
//! They are thin on purpose: the API is the product, and these verbs do only what kubectl would
//! do with it, with kubectl's spellings (`-n`, `-A`, `-l`, `-o`, `-f`, `--for`, `--timeout`), its
//! output (`physicalcontainer.drydock.dev/web created`, `Error from server (NotFound): ...`) and its
//! exit codes (0 on success, 1 on any error).

use anyhow::{Context as _, Result, anyhow, bail};
use clap::Args;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

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

/// The kube client for the chosen kubeconfig.
async fn connect(connection: &Connection) -> Result<Client> {
    connect_with(connection, |_| {}).await
}

/// The kube client for the chosen kubeconfig, its config adjusted by `adjust`.
async fn connect_with(connection: &Connection, adjust: impl FnOnce(&mut Config)) -> Result<Client> {
    let path = match &connection.kubeconfig {
        Some(path) => path.clone(),
        None => match std::env::var_os("KUBECONFIG") {
            Some(path) => PathBuf::from(path),
            None => drydock_daemon::state_dir::default_path().map_err(|e| anyhow!("{e}"))?.join("kubeconfig"),
        },
    };
    let kubeconfig = read_kubeconfig(&path)?;
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("{}: not a usable kubeconfig", path.display()))?;
    adjust(&mut config);
    Client::try_from(config).context("build the API client")
}

fn read_kubeconfig(path: &Path) -> Result<Kubeconfig> {
    if !path.exists() {
        bail!("no kubeconfig at {}: start `drydock daemon` (it writes one there) or pass --kubeconfig", path.display());
    }
    Kubeconfig::read_from(path).with_context(|| format!("cannot read kubeconfig {}", path.display()))
}

const JSON: &str = "application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

async fn request_json(client: &Client, path: &str, accept: &str) -> Result<Value> {
    let request = http::Request::get(path).header("Accept", accept).body(Vec::new())?;
    Ok(client.request::<Value>(request).await?)
}

fn is_not_found(error: &anyhow::Error) -> bool {
    matches!(error.downcast_ref::<kube::Error>(), Some(kube::Error::Api(status)) if status.code == 404)
}

fn url_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// `KIND/NAME` or `KIND` plus an optional `NAME`.
fn split_target<'a>(resource: &'a str, name: Option<&str>) -> (&'a str, Option<String>) {
    match resource.split_once('/') {
        Some((kind, name)) => (kind, Some(name.to_string())),
        None => (resource, name.map(str::to_string)),
    }
}

/// The namespace a request goes to: the one asked, none for all or cluster-scoped kinds, else
/// `default` as kubectl does.
fn namespace_for(kind: &Kind, asked: Option<&str>, all: bool) -> Option<String> {
    if !kind.namespaced || all {
        return None;
    }
    Some(asked.unwrap_or("default").to_string())
}

/// One served resource, from discovery.
struct Kind {
    resource: ApiResource,
    singular: String,
    short_names: Vec<String>,
    namespaced: bool,
}

impl Kind {
    fn api(&self, client: &Client, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) if self.namespaced => Api::namespaced_with(client.clone(), ns, &self.resource),
            _ => Api::all_with(client.clone(), &self.resource),
        }
    }

    fn path(&self, namespace: Option<&str>) -> String {
        let base = if self.resource.group.is_empty() {
            format!("/api/{}", self.resource.version)
        } else {
            format!("/apis/{}/{}", self.resource.group, self.resource.version)
        };
        match namespace {
            Some(ns) => format!("{base}/namespaces/{ns}/{}", self.resource.plural),
            None => format!("{base}/{}", self.resource.plural),
        }
    }

    /// `namespace`, `physicalcontainer.drydock.dev`, as kubectl names them in its output.
    fn qualified(&self) -> String {
        if self.resource.group.is_empty() {
            self.singular.clone()
        } else {
            format!("{}.{}", self.singular, self.resource.group)
        }
    }
}

/// Every resource the server serves (core `v1` and `drydock.dev/v1`).
struct Kinds(Vec<Kind>);

impl Kinds {
    async fn discover(client: &Client) -> Result<Kinds> {
        let mut kinds = Vec::new();
        for (group, version) in [("", "v1"), ("drydock.dev", "v1")] {
            let path = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
            let list = request_json(client, &path, JSON).await.with_context(|| format!("discovery of {path}"))?;
            for r in list["resources"].as_array().into_iter().flatten() {
                let Some(plural) = r["name"].as_str().filter(|n| !n.contains('/')) else { continue };
                let kind = r["kind"].as_str().unwrap_or_default();
                let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
                let resource = ApiResource {
                    group: group.to_string(),
                    version: version.to_string(),
                    api_version,
                    kind: kind.to_string(),
                    plural: plural.to_string(),
                };
                let singular =
                    r["singularName"].as_str().filter(|s| !s.is_empty()).unwrap_or(&kind.to_lowercase()).to_string();
                let short_names = r["shortNames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                kinds.push(Kind { resource, singular, short_names, namespaced: r["namespaced"] == true });
            }
        }
        Ok(Kinds(kinds))
    }

    /// By kind, plural, singular or short name, case-insensitively, optionally with its group
    /// (`lc`, `LogicalContainer`, `logicalcontainers.drydock.dev`).
    fn find(&self, name: &str) -> Result<&Kind> {
        let wanted = name.to_lowercase();
        let (wanted, group) = match wanted.split_once('.') {
            Some((name, group)) => (name.to_string(), Some(group.to_string())),
            None => (wanted, None),
        };
        self.0
            .iter()
            .find(|k| {
                group.as_ref().is_none_or(|g| *g == k.resource.group)
                    && (k.resource.kind.to_lowercase() == wanted
                        || k.resource.plural == wanted
                        || k.singular == wanted
                        || k.short_names.contains(&wanted))
            })
            .ok_or_else(|| anyhow!("the server doesn't have a resource type {name:?}"))
    }

    fn by_kind(&self, kind: &str) -> Result<&Kind> {
        self.0.iter().find(|k| k.resource.kind == kind).ok_or_else(|| anyhow!("the server doesn't serve kind {kind}"))
    }
}

/// A `Table` as kubectl prints it: upper-case headers, columns padded to their widest cell.
fn print_table(table: &Value, with_namespace: bool) {
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
fn describe_text(object: &Value) -> String {
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

    #[test]
    fn targets_split_and_selectors_escape() {
        assert_eq!(split_target("lc/web", None), ("lc", Some("web".to_string())));
        assert_eq!(split_target("lc", Some("web")), ("lc", Some("web".to_string())));
        assert_eq!(url_escape("app=web,tier!=db"), "app%3Dweb%2Ctier%21%3Ddb");
    }
}
