//! Image builds, as Docker 20.10's classic builder (`POST /build`, no BuildKit) runs them
//! (checked against the daemon by the conformance suite).
//!
//! The simulated runtime reads no files: a test or scenario registers each build context first
//! ([`SimRuntime::add_build_context`]: a directory and its files' contents). Then a build:
//!
//! - refuses what Docker refuses before it runs anything, in Docker's order: a tag outside the
//!   reference grammar ("invalid reference format"), a context directory that does not exist
//!   (the client's "unable to prepare context: path \"DIR\" not found"), a Dockerfile missing from
//!   it ("Cannot locate specified Dockerfile: PATH"), a `.dockerignore` the docker CLI cannot
//!   use ("error checking context: syntax error in pattern"), a Dockerfile that does not parse
//!   (see `dockerfile`), a `target` no stage is named ("failed to reach build target T in
//!   Dockerfile");
//! - runs the stages in order up to the target (the last stage without one), step by step, as
//!   the progress shows them (`Step 1/4 : FROM ...`, ` ---> ID`, what `RUN` printed, `Successfully
//!   built ID`, `Successfully tagged TAG`): `FROM` a local image, an earlier stage, or `scratch`
//!   (one not present is pulled, and a failed pull fails the build); `ARG` (the build's
//!   arguments, else the default), `ENV`, `LABEL`; `CMD` and `ENTRYPOINT` (an `ENTRYPOINT`
//!   resets a `CMD` not set in its stage); `COPY`/`ADD` of context files, but not those the
//!   context's `.dockerignore` excludes, nor the Dockerfile and `.dockerignore` when it lists
//!   them: `build_contexts::visible` (a missing or excluded source: "COPY failed: file not found
//!   in build context or excluded by .dockerignore ..."; `--from=stage` copies a stage's
//!   files); `RUN` in the shell model (see `shell`): a non-zero status fails the build ("The
//!   command '/bin/sh -c exit 3' returned a non-zero code: 3"), and in a `scratch` stage
//!   there is no `/bin/sh` to run; a step sees the stage's `ARG`s and `ENV`s in its
//!   environment, and the files it writes are the image's; `WORKDIR` (relative destinations); the other instructions
//!   are accepted and change only the id;
//! - adds a `LABEL` step for the build's labels, warns about build arguments no `ARG` used, and
//!   tags the result.
//!
//! Every failure is `Invalid`, with the builder's message: the same inputs fail the same way.
//! Ids are content-addressed as Docker's build cache makes them: each step's id is a digest of
//! its parent's id, the instruction (expanded) and what it copied, so the same inputs build the
//! same id, and a change to any input (the base image, the Dockerfile, a copied file, a used
//! argument, the target, the labels) another. The built image has the files the build copied
//! (and its `RUN` steps wrote), its `ENV` variables, its entrypoint and command, and busybox unless it was built `FROM scratch`.

use super::build_contexts::{self, relative};
use super::dockerfile::{self, Dockerfile, Instruction, command_form, copy_args, expand, pairs, split_words};
use super::image_store::ImageConfig;
use super::references::{check_reference, familiar_reference, full_id, reference_key, truncate_id};
use super::shell::{self, Fs, Outcome, Signals, clean_path};
use super::{SimRuntime, sha256_of};
use drydock_engine::runtime::{ImageBuild, RuntimeError, RuntimeReply, RuntimeResult};
use std::collections::{BTreeMap, BTreeSet};

/// Build arguments Docker always accepts without an `ARG` (the proxy variables).
const PREDEFINED_ARGS: [&str; 8] =
    ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "FTP_PROXY", "ftp_proxy", "NO_PROXY", "no_proxy"];

/// One stage's state as its steps run.
#[derive(Clone, Debug)]
struct StageState {
    /// The image id so far (empty for `scratch` before any step).
    id: String,
    config: ImageConfig,
    /// `ARG` and `ENV` values, for expansion.
    vars: BTreeMap<String, String>,
    workdir: String,
    /// Whether this stage set `CMD` (an `ENTRYPOINT` after it keeps it).
    cmd_set: bool,
}

/// A build in progress.
struct Builder<'a> {
    /// The context's files a `COPY`/`ADD` sees (its `.dockerignore` applied).
    context: &'a BTreeMap<String, String>,
    args: &'a BTreeMap<String, String>,
    used_args: BTreeSet<String>,
    progress: Vec<String>,
    step: usize,
    steps: usize,
}

impl SimRuntime {
    /// Register build context directory `dir` (absolute) with its files: relative path ->
    /// contents. Registering a directory again replaces its files.
    pub fn add_build_context(&mut self, dir: &str, files: BTreeMap<String, String>) {
        self.build_contexts.add(dir, files);
    }

    /// Docker's `POST /build` (see the module doc). Replies `Built` with the progress lines.
    pub(super) fn build_image(&mut self, build: &ImageBuild) -> RuntimeResult {
        let invalid = RuntimeError::Invalid;
        check_reference(&build.tag)?;
        if build.tag.is_empty() || build.tag.contains('@') || full_id(&build.tag).is_some() {
            return Err(invalid("invalid reference format".into()));
        }
        let Some(context) = self.build_contexts.get(&build.context).cloned() else {
            return Err(invalid(format!("unable to prepare context: path {:?} not found", build.context)));
        };
        let dockerfile_path = if build.dockerfile.is_empty() { "Dockerfile" } else { build.dockerfile.as_str() };
        let Some(text) = context.get(&relative(dockerfile_path)) else {
            return Err(invalid(format!("Cannot locate specified Dockerfile: {dockerfile_path}")));
        };
        // What COPY and ADD see: the context less what its `.dockerignore` excludes.
        let copyable = build_contexts::visible(&context, dockerfile_path).map_err(|e| invalid(e.context_message()))?;
        let file = dockerfile::parse(dockerfile_path, text).map_err(invalid)?;
        let last = match &build.target {
            Some(target) => file
                .stages
                .iter()
                .position(|s| s.name.as_deref() == Some(target.to_ascii_lowercase().as_str()))
                .ok_or_else(|| invalid(format!("failed to reach build target {target} in Dockerfile")))?,
            None => file.stages.len() - 1,
        };
        let steps = file.stages[..=last].iter().map(|s| 1 + s.instructions.len()).sum::<usize>()
            + usize::from(!build.labels.is_empty());
        let mut builder = Builder {
            context: &copyable,
            args: &build.build_args,
            used_args: BTreeSet::new(),
            progress: Vec::new(),
            step: 0,
            steps,
        };
        let mut state = self.run_stages(&mut builder, &file, last).map_err(invalid)?;
        if !build.labels.is_empty() {
            let text = build.labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
            let instruction =
                Instruction { keyword: "LABEL".into(), args: text.clone(), text: format!("LABEL {text}") };
            builder.begin(&instruction);
            builder.container_step(&mut state, &instruction.text, b"");
        }
        let unused: Vec<&String> = build
            .build_args
            .keys()
            .filter(|k| !builder.used_args.contains(*k) && !PREDEFINED_ARGS.contains(&k.as_str()))
            .collect();
        if !unused.is_empty() {
            let names: Vec<&str> = unused.iter().map(|s| s.as_str()).collect();
            builder.progress.push(format!("[Warning] One or more build-args [{}] were not consumed", names.join(" ")));
        }
        let id = state.id.clone();
        self.images.add(&id, || state.config.clone());
        self.images.set_ref(&reference_key(&build.tag), &id);
        let mut progress = builder.progress;
        progress.push(format!("Successfully built {}", truncate_id(&id)));
        progress.push(format!("Successfully tagged {}", familiar_reference(&build.tag).unwrap_or(build.tag.clone())));
        Ok(RuntimeReply::Built { progress })
    }

    /// Run stages `0..=last`; the last one's state.
    fn run_stages(&mut self, b: &mut Builder<'_>, file: &Dockerfile, last: usize) -> Result<StageState, String> {
        // The ARGs before the first FROM: usable in FROM, and as defaults of a stage's ARG.
        let mut meta = BTreeMap::new();
        for arg in &file.meta_args {
            let (name, value) = b.arg_value(&arg.args, &meta);
            if let Some(value) = value {
                meta.insert(name, value);
            }
        }
        let mut done: Vec<(Option<String>, StageState)> = Vec::new();
        for stage in &file.stages[..=last] {
            b.begin(&stage.from);
            let base = expand(&stage.base, &meta);
            let from_stage =
                done.iter().rev().find(|(name, _)| name.as_deref() == Some(base.to_ascii_lowercase().as_str()));
            let mut state = match from_stage {
                Some((_, state)) => StageState { vars: BTreeMap::new(), cmd_set: false, ..state.clone() },
                None if base == "scratch" => StageState {
                    id: String::new(),
                    config: ImageConfig { scratch: true, ..Default::default() },
                    vars: BTreeMap::new(),
                    workdir: "/".into(),
                    cmd_set: false,
                },
                None => {
                    let image = self.base_image(&base)?;
                    StageState {
                        id: image.0,
                        config: image.1,
                        vars: BTreeMap::new(),
                        workdir: "/".into(),
                        cmd_set: false,
                    }
                }
            };
            b.progress.push(format!("---> {}", truncate_id(&state.id)).trim_end().to_string());
            for instruction in &stage.instructions {
                b.begin(instruction);
                self.step(b, &mut state, instruction, &meta, &done)?;
            }
            done.push((stage.name.clone(), state));
        }
        done.pop().map(|(_, state)| state).ok_or_else(|| "no build stage in current context".to_string())
    }

    /// A base image: local, else pulled (as Docker does); a failed pull fails the build.
    fn base_image(&mut self, reference: &str) -> Result<(String, ImageConfig), String> {
        if self.images.resolve(reference).is_none()
            && let Err(e) = self.pull(reference)
        {
            return Err(match e {
                RuntimeError::Transient(m) => m.strip_prefix("500: ").map(str::to_string).unwrap_or(m),
                RuntimeError::NotFound(m)
                | RuntimeError::Invalid(m)
                | RuntimeError::Conflict(m)
                | RuntimeError::Uncertain(m) => m,
            });
        }
        let image = self.images.resolve(reference).ok_or_else(|| format!("No such image: {reference}"))?;
        Ok((image.id.clone(), image.config.clone()))
    }

    fn step(
        &mut self,
        b: &mut Builder<'_>,
        state: &mut StageState,
        instruction: &Instruction,
        meta: &BTreeMap<String, String>,
        done: &[(Option<String>, StageState)],
    ) -> Result<(), String> {
        let args = &instruction.args;
        match instruction.keyword.as_str() {
            "ARG" => {
                let (name, value) = b.arg_value(args, &state.vars);
                let value = value.or_else(|| meta.get(&name).cloned());
                let extra = format!("{name}={}", value.clone().unwrap_or_default());
                if let Some(value) = value {
                    state.vars.insert(name, value);
                }
                b.container_step(state, &instruction.text, extra.as_bytes());
            }
            "ENV" => {
                for (key, value) in pairs(&expand(args, &state.vars)) {
                    state.config.env.insert(key.clone(), value.clone());
                    state.vars.insert(key, value);
                }
                let text = expand(&instruction.text, &state.vars);
                b.container_step(state, &text, b"");
            }
            "CMD" => {
                state.config.command = command_form(args);
                state.cmd_set = true;
                b.container_step(state, &instruction.text, b"");
            }
            "ENTRYPOINT" => {
                state.config.entrypoint = command_form(args);
                if !state.cmd_set {
                    state.config.command.clear();
                }
                b.container_step(state, &instruction.text, b"");
            }
            "WORKDIR" => {
                let dir = expand(args, &state.vars);
                state.workdir =
                    clean_path(&if dir.starts_with('/') { dir } else { format!("{}/{dir}", state.workdir) });
                b.container_step(state, &instruction.text, b"");
            }
            "COPY" | "ADD" => {
                let (flags, paths) = copy_args(&expand(args, &state.vars));
                let source = match flags.get("from") {
                    None => b.context.clone(),
                    Some(from) => match done.iter().rev().find(|(name, _)| name.as_deref() == Some(from.as_str())) {
                        Some((_, stage)) => stage.config.files.iter().map(|(p, c)| (relative(p), c.clone())).collect(),
                        None => match from.parse::<usize>().ok().and_then(|i| done.get(i)) {
                            Some((_, stage)) => {
                                stage.config.files.iter().map(|(p, c)| (relative(p), c.clone())).collect()
                            }
                            None => {
                                let (_, config) = self.base_image(from)?;
                                config.files.iter().map(|(p, c)| (relative(p), c.clone())).collect()
                            }
                        },
                    },
                };
                let copied = copy(&instruction.keyword, &source, &paths, &state.workdir)?;
                let mut digest_input = Vec::new();
                for (path, contents) in &copied {
                    digest_input.extend_from_slice(path.as_bytes());
                    digest_input.push(0);
                    digest_input.extend_from_slice(contents.as_bytes());
                    digest_input.push(0);
                }
                state.config.files.extend(copied);
                let text = expand(&instruction.text, &state.vars);
                state.id = step_id(&state.id, &text, &digest_input);
                b.progress.push(format!("---> {}", truncate_id(&state.id)));
            }
            "RUN" => {
                let argv = command_form(&expand(args, &state.vars));
                let container = b.container_id(state, &instruction.text);
                b.progress.push(format!("---> Running in {container}"));
                let fs = Fs::new([], &state.config.files, !state.config.scratch);
                shell::check_exec(&argv, &fs).map_err(|failure| failure.message)?;
                // A step's environment: the stage's `ARG`s and `ENV`s.
                let env = shell::environment(&state.vars, container.get(..12).unwrap_or(&container));
                let ran = shell::run(&argv, &fs, &env, Signals::default());
                b.progress.extend(ran.printed.into_iter().map(|p| p.text));
                // What the step wrote is in the image's layer.
                state.config.files.extend(ran.written);
                match ran.outcome {
                    Outcome::Exits { code: 0, .. } => {}
                    Outcome::Exits { code, .. } => {
                        return Err(format!("The command '{}' returned a non-zero code: {code}", argv.join(" ")));
                    }
                    Outcome::Forever => {
                        return Err(format!(
                            "The command '{}' never ends: the simulated builder cannot wait for it",
                            argv.join(" ")
                        ));
                    }
                }
                b.progress.push(format!("Removing intermediate container {container}"));
                state.id = step_id(&state.id, &expand(&instruction.text, &state.vars), b"");
                b.progress.push(format!("---> {}", truncate_id(&state.id)));
            }
            "VOLUME" => {
                // `VOLUME ["/a", "/b"]` or `VOLUME /a /b` (a relative path is taken from `/` here;
                // not tried against Docker).
                let expanded = expand(args, &state.vars);
                let paths = match serde_json::from_str::<Vec<String>>(&expanded) {
                    Ok(paths) => paths,
                    Err(_) => expanded.split_whitespace().map(str::to_string).collect(),
                };
                for path in paths.iter().filter(|p| !p.is_empty()) {
                    state.config.volumes.insert(clean_path(&format!("/{path}")));
                }
                let text = expand(&instruction.text, &state.vars);
                b.container_step(state, &text, b"");
            }
            // LABEL, EXPOSE, USER, ...: only the id changes.
            _ => {
                let text = expand(&instruction.text, &state.vars);
                b.container_step(state, &text, b"");
            }
        }
        Ok(())
    }
}

impl Builder<'_> {
    /// Announce the next step.
    fn begin(&mut self, instruction: &Instruction) {
        self.step += 1;
        self.progress.push(format!("Step {}/{} : {}", self.step, self.steps, instruction.text));
    }

    /// A step Docker runs in an intermediate container that changes only the image's config.
    fn container_step(&mut self, state: &mut StageState, text: &str, extra: &[u8]) {
        let container = self.container_id(state, text);
        self.progress.push(format!("---> Running in {container}"));
        self.progress.push(format!("Removing intermediate container {container}"));
        state.id = step_id(&state.id, text, extra);
        self.progress.push(format!("---> {}", truncate_id(&state.id)));
    }

    /// The short id of the intermediate container a step of `state` runs in.
    fn container_id(&self, state: &StageState, text: &str) -> String {
        let id = sha256_of(&[b"intermediate", state.id.as_bytes(), text.as_bytes()]);
        truncate_id(&id).to_string()
    }

    /// An `ARG NAME[=default]`: its name and value (the build's argument, else the default
    /// expanded with `vars`).
    fn arg_value(&mut self, args: &str, vars: &BTreeMap<String, String>) -> (String, Option<String>) {
        let words = split_words(args);
        let first = words.first().cloned().unwrap_or_default();
        let (name, default) = match first.split_once('=') {
            Some((name, default)) => (name.to_string(), Some(expand(default, vars))),
            None => (first, None),
        };
        self.used_args.insert(name.clone());
        let value = self.args.get(&name).cloned().or(default);
        (name, value)
    }
}

/// The id of the step `text` (expanded) on `parent`, with `extra` (copied contents, an
/// argument's value).
fn step_id(parent: &str, text: &str, extra: &[u8]) -> String {
    sha256_of(&[b"build-step", parent.as_bytes(), &[0], text.as_bytes(), &[0], extra])
}

/// What `COPY SOURCES... DEST` writes: absolute path -> contents. Sources are files or
/// directories (their contents, recursively) of `from` (relative paths), `*` and `?` matching
/// within a path component; with several sources (or a directory) the destination is a
/// directory, as it is when it ends with `/`.
fn copy(
    keyword: &str,
    from: &BTreeMap<String, String>,
    paths: &[String],
    workdir: &str,
) -> Result<BTreeMap<String, String>, String> {
    let Some((dest, sources)) = paths.split_last().filter(|(_, sources)| !sources.is_empty()) else {
        return Err(format!("{keyword} requires at least two arguments"));
    };
    let dest_dir = dest.ends_with('/') || dest == "." || sources.len() > 1;
    let dest = clean_path(&if dest.starts_with('/') { dest.clone() } else { format!("{workdir}/{dest}") });
    let mut out = BTreeMap::new();
    for source in sources {
        let source = relative(source);
        let mut matched = false;
        for (path, contents) in from {
            let target = if source.is_empty() {
                Some(format!("{dest}/{path}"))
            } else if *path == source || (has_glob(&source) && glob_match(&source, path)) {
                let name = path.rsplit('/').next().unwrap_or(path);
                Some(if dest_dir { format!("{dest}/{name}") } else { dest.clone() })
            } else {
                path.strip_prefix(&format!("{source}/")).map(|rest| format!("{dest}/{rest}"))
            };
            if let Some(target) = target {
                matched = true;
                out.insert(clean_path(&target), contents.clone());
            }
        }
        if !matched {
            return Err(format!(
                "{keyword} failed: file not found in build context or excluded by .dockerignore: stat {source}: file does not exist"
            ));
        }
    }
    Ok(out)
}

fn has_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?'])
}

/// Whether `path` matches `pattern` component by component (`*`: any run of characters, `?`: one).
fn glob_match(pattern: &str, path: &str) -> bool {
    let (p, s): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
    p.len() == s.len() && p.iter().zip(&s).all(|(p, s)| component_match(p.as_bytes(), s.as_bytes()))
}

fn component_match(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => component_match(&p[1..], s) || (!s.is_empty() && component_match(p, &s[1..])),
        (Some(b'?'), Some(_)) => component_match(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => component_match(&p[1..], &s[1..]),
        _ => false,
    }
}

#[cfg(test)]
#[path = "builds_tests.rs"]
mod tests;
