//! Builds: contexts, the Dockerfile subset, failures, ids, and the images they make.

use super::super::test_support::{a_moment_later, id_of, image};
use super::*;
use drydock_engine::WallTime;
use drydock_engine::runtime::{ContainerCreate, ContainerState, RuntimeRequest};

const DOCKERFILE: &str = r#"FROM busybox AS base
ARG GREETING=hello
ENV G=$GREETING
LABEL stage=base
COPY hello.txt /data/hello.txt
COPY conf /etc/app/
RUN echo built $G
CMD ["cat", "/data/hello.txt"]

FROM base AS second
RUN exit 3
"#;

fn runtime() -> SimRuntime {
    let mut rt = SimRuntime::new(1);
    rt.add_image("busybox");
    rt.add_build_context(
        "/ctx",
        BTreeMap::from([
            ("Dockerfile".to_string(), DOCKERFILE.to_string()),
            ("hello.txt".to_string(), "hi there\nsecond line\n".to_string()),
            ("conf/a.conf".to_string(), "a=1".to_string()),
            ("bad/Dockerfile".to_string(), "FROM busybox\nFOO bar\n".to_string()),
        ]),
    );
    rt
}

fn build(target: Option<&str>, tag: &str) -> ImageBuild {
    ImageBuild {
        context: "/ctx".into(),
        dockerfile: "Dockerfile".into(),
        target: target.map(str::to_string),
        tag: tag.into(),
        ..Default::default()
    }
}

fn run_build(rt: &mut SimRuntime, build: &ImageBuild) -> Result<Vec<String>, RuntimeError> {
    match rt.execute(&RuntimeRequest::BuildImage(build.clone())) {
        Ok(RuntimeReply::Built { progress }) => Ok(progress),
        Ok(other) => panic!("build replied {other:?}"),
        Err(e) => Err(e),
    }
}

fn invalid(r: Result<Vec<String>, RuntimeError>) -> String {
    match r {
        Err(RuntimeError::Invalid(m)) => m,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn a_target_stage_builds_with_progress_and_a_tag() {
    let mut rt = runtime();
    let progress = run_build(&mut rt, &build(Some("base"), "app:1")).expect("built");
    assert_eq!(progress[0], "Step 1/8 : FROM busybox AS base");
    assert!(progress.contains(&"Step 7/8 : RUN echo built $G".to_string()), "{progress:#?}");
    assert!(progress.contains(&"built hello".to_string()), "RUN's output, expanded: {progress:#?}");
    let id = image(&mut rt, "app:1").expect("tagged").id;
    assert_eq!(progress[progress.len() - 2], format!("Successfully built {}", truncate_id(&id)));
    assert_eq!(progress.last().map(String::as_str), Some("Successfully tagged app:1"));
    // The image's command runs in its containers, and reads the copied files.
    let created = rt.execute(&RuntimeRequest::CreateContainer(ContainerCreate {
        name: "reader".into(),
        image: "app:1".into(),
        ..Default::default()
    }));
    let container = id_of(created);
    rt.execute(&RuntimeRequest::StartContainer { id: container.clone() }).expect("start");
    a_moment_later(&mut rt);
    assert_eq!(rt.container(&container).map(|c| (c.state, c.exit_code)), Some((ContainerState::Exited, Some(0))));
    let printed: Vec<String> =
        rt.output(&container).expect("output").printed_by(WallTime(u64::MAX)).iter().map(|l| l.text.clone()).collect();
    assert_eq!(printed, ["hi there", "second line"]);
    assert_eq!(rt.container_file(&container, "/etc/app/a.conf"), Some("a=1"), "a directory's files");
}

#[test]
fn the_same_inputs_build_the_same_id_and_any_change_another() {
    let id = |change: &dyn Fn(&mut SimRuntime, &mut ImageBuild)| {
        let mut rt = runtime();
        let mut b = build(Some("base"), "app:1");
        change(&mut rt, &mut b);
        run_build(&mut rt, &b).expect("built");
        image(&mut rt, "app:1").expect("tagged").id
    };
    let plain = id(&|_, _| {});
    assert_eq!(id(&|_, _| {}), plain);
    type Change = Box<dyn Fn(&mut SimRuntime, &mut ImageBuild)>;
    let changes: Vec<(&str, Change)> = vec![
        ("an argument", Box::new(|_, b| drop(b.build_args.insert("GREETING".into(), "bye".into())))),
        ("a label", Box::new(|_, b| drop(b.labels.insert("x".into(), "y".into())))),
        (
            "a copied file",
            Box::new(|rt, _| {
                let mut files = rt.build_contexts.get("/ctx").cloned().unwrap_or_default();
                files.insert("hello.txt".into(), "changed".into());
                rt.add_build_context("/ctx", files);
            }),
        ),
    ];
    for (what, change) in changes {
        assert_ne!(id(&*change), plain, "{what}");
    }
    let unused_arg = {
        let mut rt = runtime();
        let mut b = build(Some("base"), "app:1");
        b.build_args.insert("UNUSED".into(), "1".into());
        run_build(&mut rt, &b).expect("built")
    };
    assert!(unused_arg.contains(&"[Warning] One or more build-args [UNUSED] were not consumed".to_string()));
}

#[test]
fn failing_builds_are_invalid_with_the_builders_message() {
    let mut rt = runtime();
    let m = invalid(run_build(&mut rt, &build(None, "app:1")));
    assert_eq!(m, "The command '/bin/sh -c exit 3' returned a non-zero code: 3");
    assert!(!rt.has_image("app:1"), "nothing tagged");
    let m = invalid(run_build(&mut rt, &build(Some("nostage"), "app:1")));
    assert_eq!(m, "failed to reach build target nostage in Dockerfile");
    let m = invalid(run_build(&mut rt, &ImageBuild { dockerfile: "bad/Dockerfile".into(), ..build(None, "app:1") }));
    assert_eq!(m, "dockerfile parse error line 2: unknown instruction: FOO");
    let m = invalid(run_build(&mut rt, &ImageBuild { dockerfile: "nope".into(), ..build(None, "app:1") }));
    assert_eq!(m, "Cannot locate specified Dockerfile: nope");
    let m = invalid(run_build(&mut rt, &ImageBuild { context: "/nowhere".into(), ..build(None, "app:1") }));
    assert_eq!(m, "unable to prepare context: path \"/nowhere\" not found");
    let m = invalid(run_build(&mut rt, &build(None, "Bad:Tag")));
    assert!(m.starts_with("invalid reference format"), "{m}");
    let files = |dockerfile: &str| {
        BTreeMap::from([("Dockerfile".to_string(), dockerfile.to_string()), ("a.txt".to_string(), "a".to_string())])
    };
    for (dockerfile, message) in [
        ("FROM absent-image:1\n", "pull access denied for absent-image"),
        (
            "FROM busybox\nCOPY missing.txt /x\n",
            "COPY failed: file not found in build context or excluded by .dockerignore: stat missing.txt: file does not exist",
        ),
        ("FROM scratch\nRUN true\n", "exec: \"/bin/sh\": stat /bin/sh: no such file or directory"),
        ("FROM busybox\nRUN false\n", "The command '/bin/sh -c false' returned a non-zero code: 1"),
        ("", "the Dockerfile (Dockerfile) cannot be empty"),
    ] {
        rt.add_build_context("/other", files(dockerfile));
        let m = invalid(run_build(&mut rt, &ImageBuild { context: "/other".into(), ..build(None, "app:2") }));
        assert!(m.contains(message), "{dockerfile:?}: {m}");
    }
}

#[test]
fn scratch_images_entrypoints_and_stage_copies() {
    let mut rt = runtime();
    let dockerfile = "FROM busybox AS tools\nWORKDIR /opt\nCOPY a.txt .\nFROM scratch\nCOPY --from=tools /opt/a.txt /a.txt\nCMD [\"/a.txt\"]\nFROM busybox\nENTRYPOINT [\"echo\", \"hello\"]\n";
    rt.add_build_context(
        "/multi",
        BTreeMap::from([("Dockerfile".to_string(), dockerfile.to_string()), ("a.txt".to_string(), "A".to_string())]),
    );
    let b = |target: Option<&str>, tag: &str| ImageBuild {
        context: "/multi".into(),
        dockerfile: String::new(),
        target: target.map(str::to_string),
        tag: tag.into(),
        ..Default::default()
    };
    run_build(&mut rt, &b(None, "entry:1")).expect("built");
    let create = |image: &str, command: &[&str]| {
        RuntimeRequest::CreateContainer(ContainerCreate {
            name: format!("c-{}-{}", image.replace(':', "-"), command.len()),
            image: image.into(),
            command: command.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        })
    };
    let c = id_of(rt.execute(&create("entry:1", &["world"])));
    rt.execute(&RuntimeRequest::StartContainer { id: c.clone() }).expect("start");
    let printed: Vec<String> =
        rt.output(&c).expect("output").printed_by(WallTime(u64::MAX)).iter().map(|l| l.text.clone()).collect();
    assert_eq!(printed, ["hello world"], "the entrypoint, then the create's command");
    let scratch = "FROM busybox AS tools\nWORKDIR /opt\nCOPY a.txt .\nFROM scratch\nCOPY --from=tools /opt/a.txt /a.txt\nCMD [\"/a.txt\"]\n";
    rt.add_build_context(
        "/scratch",
        BTreeMap::from([("Dockerfile".to_string(), scratch.to_string()), ("a.txt".to_string(), "A".to_string())]),
    );
    run_build(&mut rt, &ImageBuild { context: "/scratch".into(), ..b(None, "bare:1") }).expect("built");
    let c = id_of(rt.execute(&create("bare:1", &[])));
    assert_eq!(rt.container_file(&c, "/a.txt"), Some("A"), "copied from the other stage");
    match rt.execute(&RuntimeRequest::StartContainer { id: c.clone() }) {
        // The file is there, but its mode does not let it run (Docker 20.10: `exec: "/a.txt":
        // permission denied`, 126).
        Err(RuntimeError::Invalid(m)) => assert!(m.contains("\"/a.txt\": permission denied"), "{m}"),
        other => panic!("a scratch image runs nothing: {other:?}"),
    }
    let m = match rt.execute(&create("bare:1", &["sh"])) {
        Ok(RuntimeReply::Created { id }) => rt.execute(&RuntimeRequest::StartContainer { id }),
        other => panic!("{other:?}"),
    };
    assert!(matches!(m, Err(RuntimeError::Invalid(m)) if m.contains("executable file not found")));
}

/// A context with a `.dockerignore`: secrets, build output (but one kept file), temporaries and
/// the Dockerfile itself listed.
fn ignoring_context(rt: &mut SimRuntime, dockerignore: &str) {
    rt.add_build_context(
        "/ignoring",
        BTreeMap::from([
            ("Dockerfile".to_string(), "FROM busybox\nCOPY . /app/\n".to_string()),
            (".dockerignore".to_string(), dockerignore.to_string()),
            ("kept.txt".to_string(), "kept".to_string()),
            ("secret.env".to_string(), "SECRET=1".to_string()),
            ("target/out.bin".to_string(), "binary".to_string()),
            ("target/keep.txt".to_string(), "keep".to_string()),
            ("src/main.sh".to_string(), "echo main".to_string()),
            ("src/cache.tmp".to_string(), "temporary".to_string()),
        ]),
    );
}

const IGNORE: &str =
    "# secrets and build output stay out\nsecret.env\n/target/\n!target/keep.txt\n**/*.tmp\nDockerfile\n";

fn ignoring_build(dockerfile: &str) -> ImageBuild {
    ImageBuild {
        context: "/ignoring".into(),
        dockerfile: dockerfile.into(),
        tag: "ignoring:1".into(),
        ..Default::default()
    }
}

/// `.dockerignore` excludes files from what `COPY .` copies; an exception re-includes one; the
/// Dockerfile is read although it is listed, but not copied; `.dockerignore` itself is copied
/// as it does not list itself.
#[test]
fn copy_leaves_out_what_dockerignore_excludes() {
    let mut rt = runtime();
    ignoring_context(&mut rt, IGNORE);
    run_build(&mut rt, &ignoring_build("Dockerfile")).expect("built: the Dockerfile is sent though listed");
    let c = id_of(rt.execute(&RuntimeRequest::CreateContainer(ContainerCreate {
        name: "ignoring".into(),
        image: "ignoring:1".into(),
        ..Default::default()
    })));
    let files: Vec<(&str, Option<&str>)> = [
        "/app/kept.txt",
        "/app/target/keep.txt",
        "/app/src/main.sh",
        "/app/.dockerignore",
        "/app/secret.env",
        "/app/target/out.bin",
        "/app/src/cache.tmp",
        "/app/Dockerfile",
    ]
    .into_iter()
    .map(|path| (path, rt.container_file(&c, path)))
    .collect();
    assert_eq!(
        files,
        [
            ("/app/kept.txt", Some("kept")),
            ("/app/target/keep.txt", Some("keep")),
            ("/app/src/main.sh", Some("echo main")),
            ("/app/.dockerignore", Some(IGNORE)),
            ("/app/secret.env", None),
            ("/app/target/out.bin", None),
            ("/app/src/cache.tmp", None),
            ("/app/Dockerfile", None),
        ]
    );
}

/// An excluded file named as a source is "not found in build context or excluded by
/// .dockerignore"; an excluded file's contents do not change the image's id (it is not sent),
/// a kept file's do; a `.dockerignore` the CLI cannot use fails the build with its message.
#[test]
fn excluded_sources_fail_and_do_not_change_the_id() {
    let mut rt = runtime();
    ignoring_context(&mut rt, IGNORE);
    let mut files = rt.build_contexts.get("/ignoring").cloned().unwrap_or_default();
    files.insert("secret.Dockerfile".into(), "FROM busybox\nCOPY secret.env /secret.env\n".into());
    files.insert("glob.Dockerfile".into(), "FROM busybox\nCOPY target/* /out/\n".into());
    rt.add_build_context("/ignoring", files.clone());
    let m = invalid(run_build(&mut rt, &ignoring_build("secret.Dockerfile")));
    assert_eq!(
        m,
        "COPY failed: file not found in build context or excluded by .dockerignore: stat secret.env: file does not exist"
    );
    run_build(&mut rt, &ignoring_build("glob.Dockerfile")).expect("built");
    let c = id_of(rt.execute(&RuntimeRequest::CreateContainer(ContainerCreate {
        name: "glob".into(),
        image: "ignoring:1".into(),
        ..Default::default()
    })));
    assert_eq!(rt.container_file(&c, "/out/keep.txt"), Some("keep"));
    assert_eq!(rt.container_file(&c, "/out/out.bin"), None, "a glob does not reach an excluded file");

    let id = |rt: &mut SimRuntime| {
        run_build(rt, &ignoring_build("Dockerfile")).expect("built");
        image(rt, "ignoring:1").expect("tagged").id
    };
    let plain = id(&mut rt);
    let mut changed = files.clone();
    changed.insert("secret.env".into(), "SECRET=2".into());
    rt.add_build_context("/ignoring", changed);
    assert_eq!(id(&mut rt), plain, "an excluded file is not part of the build");
    let mut changed = files.clone();
    changed.insert("target/keep.txt".into(), "changed".into());
    rt.add_build_context("/ignoring", changed);
    assert_ne!(id(&mut rt), plain, "a kept file is");

    for (dockerignore, message) in [
        ("ok\n!\n", "error checking context: illegal exclusion pattern: \"!\""),
        ("secret[\n", "error checking context: syntax error in pattern"),
    ] {
        ignoring_context(&mut rt, dockerignore);
        assert_eq!(invalid(run_build(&mut rt, &ignoring_build("Dockerfile"))), message);
    }
}
