//! The parts of a container's description that more than one kind (and the runtime contract)
//! share: environment, ports, mounts, copied files, network attachments; and the validation of
//! those parts that admission runs for every kind that has them, so the store refuses what the
//! runtime would refuse (or accept and then fail on, for ever).

use super::validation::{Claim, FieldError, is_dns_label};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// An environment variable set in the container.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvVar {
    /// The variable's name: not empty, without `=` or NUL.
    pub name: String,
    /// Its value (empty by default).
    #[serde(default)]
    pub value: String,
}

/// The transport protocol of a published port.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    #[default]
    Tcp,
    Udp,
}

/// A container port published on the host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PortMapping {
    /// `tcp` (the default) or `udp`.
    #[serde(default)]
    pub protocol: Protocol,
    /// The host port (1-65535); absent or 0: the runtime picks a free one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_port: Option<u16>,
    /// The port inside the container (1-65535).
    pub container_port: u16,
    /// The host address to bind (an IP address); absent: every address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_ip: Option<String>,
}

/// A bind mount of a host path, or a `ContainerVolume`, into the container.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Mount {
    /// An absolute host path, or the name of a `ContainerVolume` in the same namespace.
    pub source: String,
    /// The absolute path inside the container to mount it at (not `/`; each target once).
    pub target: String,
    /// Mount it read-only.
    #[serde(default)]
    pub read_only: bool,
}

/// A file copied into the container before it starts (DCP's `createFiles`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CopiedFile {
    /// Absolute path of the file in the container; missing parent directories are made.
    pub destination: String,
    /// The file's contents, as text.
    pub contents: String,
    /// The file's permission bits, as a number (`0o644`, i.e. 420, by default).
    #[serde(default = "default_mode")]
    pub mode: u32,
    /// Numeric owner (root's by default).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub owner: u32,
    /// Numeric group (root's by default).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub group: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn default_mode() -> u32 {
    0o644
}

/// A `ContainerNetwork` the container attaches to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkAttachment {
    /// The name of a `ContainerNetwork` in the same namespace (each network once).
    pub name: String,
    /// Extra names (DNS labels) the container answers to on that network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

/// What a container-creating object claims in its namespace: the name of its runtime container.
pub const CLAIM_CONTAINER_NAME: &str = "container name";

/// The claim of the runtime container name `name` (which `spec.containerName` sets, or which
/// defaults from the object's namespace and name).
pub(crate) fn container_name_claim(name: String) -> Claim {
    Claim::new(CLAIM_CONTAINER_NAME, name, "spec.containerName")
}

/// An environment variable name Docker can pass: not empty, without `=` (which would end the
/// name early) and without NUL (which no process environment can hold).
pub(crate) fn check_env_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        Err("an environment variable name must not be empty".into())
    } else if name.contains('=') {
        Err(format!("environment variable name {name:?} must not contain '='"))
    } else if name.contains('\0') {
        Err(format!("environment variable name {name:?} must not contain NUL"))
    } else {
        Ok(())
    }
}

/// Ports as Docker publishes them: a container port in 1..=65535; a host port in 1..=65535, or
/// 0 / absent for one the runtime picks; a host IP that is an IP address; and no two mappings
/// binding one host port (same protocol, overlapping addresses), which Docker accepts at create
/// and then fails to start, every time.
pub(crate) fn validate_ports(path: &str, ports: &[PortMapping]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        if port.container_port == 0 {
            errors.push(FieldError::new(format!("{path}[{i}].containerPort"), "must be between 1 and 65535"));
        }
        if let Some(ip) = &port.host_ip
            && ip.parse::<IpAddr>().is_err()
        {
            errors.push(FieldError::new(format!("{path}[{i}].hostIp"), format!("{ip:?} is not an IP address")));
        }
        let Some(host_port) = port.host_port.filter(|p| *p != 0) else { continue };
        let earlier = ports[..i].iter().position(|other| {
            other.protocol == port.protocol
                && other.host_port == Some(host_port)
                && addresses_overlap(other.host_ip.as_deref(), port.host_ip.as_deref())
        });
        if let Some(j) = earlier {
            errors.push(FieldError::new(
                format!("{path}[{i}].hostPort"),
                format!("host port {host_port} is already published by {path}[{j}]"),
            ));
        }
    }
    errors
}

/// Whether two host IPs (absent: every address) can bind the same port.
fn addresses_overlap(a: Option<&str>, b: Option<&str>) -> bool {
    let any = |ip: Option<&str>| ip.is_none_or(|ip| ip.parse::<IpAddr>().is_ok_and(|ip| ip.is_unspecified()));
    any(a) || any(b) || a == b
}

/// Bind mounts as Docker accepts them, and as drydock can clean up after:
/// - the target is an absolute container path, not `/`, not mounted twice (compared cleaned:
///   `/data` and `/data/` are one target);
/// - the source is an absolute host path, or the name of a `ContainerVolume` in the same
///   namespace (an object name: never a runtime volume name directly, which would make Docker
///   create a volume nothing in drydock owns). A relative path is refused by Docker.
/// - neither contains `:`, which Docker's bind syntax (`source:target[:ro]`) cannot carry.
pub(crate) fn validate_mounts(path: &str, mounts: &[Mount]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut targets: Vec<String> = Vec::with_capacity(mounts.len());
    for (i, mount) in mounts.iter().enumerate() {
        let source_path = format!("{path}[{i}].source");
        let source = mount.source.as_str();
        if source.is_empty() {
            errors.push(FieldError::new(
                source_path,
                "a mount needs a source (an absolute host path or a ContainerVolume's name)",
            ));
        } else if !source.contains('/') && !is_dns_label(source) {
            errors.push(FieldError::new(
                source_path,
                format!("{source:?} is neither an absolute host path nor the name of a ContainerVolume"),
            ));
        } else if source.contains('/') && !source.starts_with('/') {
            errors.push(FieldError::new(source_path, format!("{source:?} must be an absolute host path")));
        } else if source.contains(':') {
            errors.push(FieldError::new(source_path, format!("{source:?} must not contain ':'")));
        }
        let target_path = format!("{path}[{i}].target");
        let target = mount.target.as_str();
        let cleaned = clean_path(target);
        let duplicate = targets.iter().position(|t| *t == cleaned);
        targets.push(cleaned.clone());
        let problem = if !target.starts_with('/') {
            format!("{target:?} must be an absolute container path")
        } else if target.contains(':') {
            format!("{target:?} must not contain ':'")
        } else if cleaned == "/" {
            "a mount cannot replace the container's root '/'".to_string()
        } else if let Some(j) = duplicate {
            format!("{cleaned} is already mounted by {path}[{j}]")
        } else {
            continue;
        };
        errors.push(FieldError::new(target_path, problem));
    }
    errors
}

/// Network attachments: each names a `ContainerNetwork` (an object name) once, with aliases
/// Docker's DNS can serve (DNS labels).
pub(crate) fn validate_networks(path: &str, networks: &[NetworkAttachment]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, network) in networks.iter().enumerate() {
        if !is_dns_label(&network.name) {
            errors.push(FieldError::new(
                format!("{path}[{i}].name"),
                format!("{:?} is not the name of a ContainerNetwork", network.name),
            ));
        }
        if let Some(j) = networks[..i].iter().position(|n| n.name == network.name) {
            errors.push(FieldError::new(
                format!("{path}[{i}].name"),
                format!("{} is already attached by {path}[{j}]", network.name),
            ));
        }
        for (k, alias) in network.aliases.iter().enumerate() {
            if !is_dns_label(alias) {
                errors.push(FieldError::new(
                    format!("{path}[{i}].aliases[{k}]"),
                    format!("{alias:?} is not a valid alias: use a DNS label"),
                ));
            }
        }
    }
    errors
}

/// Copied files: an absolute destination that names a file (not `/`, not ending in `/`), each
/// once, a mode of permission bits only; and none Docker's archive upload is bound to refuse:
/// below another copied file (`not a directory`) or under one of the container's read-only
/// mounts (`read-only file system`).
pub(crate) fn validate_files(path: &str, files: &[CopiedFile], mounts: &[Mount]) -> Vec<FieldError> {
    let names_a_file = |d: &str| d.starts_with('/') && !d.ends_with('/') && clean_path(d) != "/";
    let mut errors = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let destination = &file.destination;
        let cleaned = clean_path(destination);
        let field = || format!("{path}[{i}].destination");
        if !names_a_file(destination) {
            errors.push(FieldError::new(field(), format!("{destination:?} must be the absolute path of a file")));
        } else if let Some(j) = files[..i].iter().position(|f| clean_path(&f.destination) == cleaned) {
            errors.push(FieldError::new(field(), format!("{cleaned} is already copied by {path}[{j}]")));
        } else if let Some(j) =
            files.iter().position(|f| names_a_file(&f.destination) && is_below(&cleaned, &clean_path(&f.destination)))
        {
            let parent = clean_path(&files[j].destination);
            errors.push(FieldError::new(
                field(),
                format!("{cleaned} is below {parent}, a file {path}[{j}] copies: it cannot also be a directory"),
            ));
        } else if let Some(k) =
            mounts.iter().position(|m| m.read_only && is_below_or_at(&cleaned, &clean_path(&m.target)))
        {
            errors.push(FieldError::new(
                field(),
                format!(
                    "{cleaned} is under the read-only mount {}: nothing can be copied there",
                    clean_path(&mounts[k].target)
                ),
            ));
        }
        if file.mode > 0o7777 {
            errors.push(FieldError::new(format!("{path}[{i}].mode"), format!("{:o} is not a file mode", file.mode)));
        }
    }
    errors
}

/// Whether cleaned absolute path `path` is strictly inside directory `dir`.
fn is_below(path: &str, dir: &str) -> bool {
    path.len() > dir.len() && path.starts_with(dir) && (dir == "/" || path.as_bytes()[dir.len()] == b'/')
}

fn is_below_or_at(path: &str, dir: &str) -> bool {
    path == dir || is_below(path, dir)
}

/// Whether a mount's source names a `ContainerVolume` (rather than a host path).
pub fn is_volume_source(source: &str) -> bool {
    !source.starts_with('/')
}

/// A path with repeated `/`, `.` and `..` resolved (Go's `path.Clean`, which Docker applies to
/// mount targets before comparing them).
fn clean_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(source: &str, target: &str) -> Mount {
        Mount { source: source.into(), target: target.into(), read_only: false }
    }

    fn paths(errors: &[FieldError]) -> Vec<&str> {
        errors.iter().map(|e| e.path.as_str()).collect()
    }

    #[test]
    fn files_docker_would_refuse_to_write() {
        let file = |destination: &str| CopiedFile {
            destination: destination.into(),
            contents: String::new(),
            mode: 0o644,
            owner: 0,
            group: 0,
        };
        let read_only = Mount { source: "vol".into(), target: "/data/".into(), read_only: true };
        let mounts = [read_only, mount("/srv", "/srv")];
        let ok = [file("/etc/app.conf"), file("/etc/app.d/x"), file("/srv/x"), file("/database")];
        assert_eq!(validate_files("spec.files", &ok, &mounts), []);
        let bad = [file("/etc/app"), file("/etc/app/x"), file("/data/f"), file("/data/sub/g")];
        let errors = validate_files("spec.files", &bad, &mounts);
        let expected = ["spec.files[1].destination", "spec.files[2].destination", "spec.files[3].destination"];
        assert_eq!(paths(&errors), expected);
        assert_eq!(
            errors[0].message,
            "/etc/app/x is below /etc/app, a file spec.files[0] copies: it cannot also be a directory"
        );
        assert_eq!(errors[2].message, "/data/sub/g is under the read-only mount /data: nothing can be copied there");
        assert_eq!(errors[1].message, "/data/f is under the read-only mount /data: nothing can be copied there");
    }

    #[test]
    fn mounts() {
        let ok = [mount("/srv/data", "/data"), mount("/", "/host"), mount("/a/b", "/data/sub")];
        assert_eq!(validate_mounts("spec.mounts", &ok), []);
        let bad = [
            mount("Data_1", "/a"),   // neither a path nor an object name
            mount("./data", "/b"),   // relative
            mount("", "/c"),         // no source
            mount("/x:y", "/d"),     // ':' in the source
            mount("/x", "relative"), // relative target
            mount("/x", "/"),        // the root
            mount("/x", "//./"),     // the root, cleaned
            mount("/x", "/a/"),      // the same as [0]'s target, cleaned
            mount("/x", "/e:ro"),    // ':' in the target
        ];
        let errors = validate_mounts("spec.mounts", &bad);
        assert_eq!(
            paths(&errors),
            [
                "spec.mounts[0].source",
                "spec.mounts[1].source",
                "spec.mounts[2].source",
                "spec.mounts[3].source",
                "spec.mounts[4].target",
                "spec.mounts[5].target",
                "spec.mounts[6].target",
                "spec.mounts[7].target",
                "spec.mounts[8].target",
            ]
        );
        assert!(
            errors[0].message.contains("neither an absolute host path nor the name of a ContainerVolume"),
            "{}",
            errors[0]
        );
        assert!(errors[7].message.contains("spec.mounts[0]"), "{}", errors[7]);
    }

    #[test]
    fn ports() {
        let port = |container_port, host_port, host_ip: Option<&str>| PortMapping {
            protocol: Protocol::Tcp,
            host_port,
            container_port,
            host_ip: host_ip.map(str::to_string),
        };
        let ok = [
            port(80, None, None),
            port(81, Some(0), None),
            port(82, Some(0), None), // ephemeral ports never collide
            port(443, Some(8443), Some("127.0.0.1")),
            port(444, Some(8443), Some("127.0.0.2")), // another address
            PortMapping { protocol: Protocol::Udp, ..port(53, Some(8080), None) },
            port(8080, Some(8080), Some("::1")),
        ];
        assert_eq!(validate_ports("spec.ports", &ok), []);
        let bad = [
            port(0, None, None),
            port(80, Some(9000), Some("localhost")),
            port(81, Some(9000), None),
            port(82, Some(9000), Some("0.0.0.0")),
        ];
        let errors = validate_ports("spec.ports", &bad);
        assert_eq!(
            paths(&errors),
            ["spec.ports[0].containerPort", "spec.ports[1].hostIp", "spec.ports[2].hostPort", "spec.ports[3].hostPort"]
        );
    }

    #[test]
    fn env_names() {
        assert_eq!(check_env_name("PATH"), Ok(()));
        assert_eq!(check_env_name("lower_1"), Ok(()));
        assert!(check_env_name("").is_err());
        assert!(check_env_name("A=B").is_err());
        assert!(check_env_name("A\0").is_err());
    }

    #[test]
    fn paths_are_cleaned_as_go_does() {
        assert_eq!(clean_path("/a//b/./c/"), "/a/b/c");
        assert_eq!(clean_path("/a/../.."), "/");
        assert_eq!(clean_path("//"), "/");
    }
}
