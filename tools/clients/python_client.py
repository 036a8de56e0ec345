#!/usr/bin/env python3
"""The client compatibility scenario, driven by the official Kubernetes Python client.

Reads the scenario's input as JSON on stdin:

    {"kubeconfig": PATH, "namespace": NS, "group": "drydock.dev", "version": "v1",
     "objects": [{"plural": P, "body": {...}, "cluster": BOOL}, ...],
     "paged": {"plural": P, "bodies": [{...}, ...]},
     "conditions": {"plural": P, "name": N}}

and prints one JSON object per step on stdout: {"step": NAME, "code": HTTP_CODE, ...}. The
harness (cli/tests/daemon_clients.rs) judges each step against the API conventions; a driver for
another client prints the same steps. Nothing here decides what is right.
"""

import json
import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


def report(step, code, **fields):
    print(json.dumps({"step": step, "code": code, **fields}), flush=True)


def attempt(step, call, **fields):
    """Run `call`, report its code (200/201 as the client saw it, or the error's) and return its
    result (None on an error)."""
    try:
        result, code, _ = call()
        report(step, code, **fields)
        return result
    except ApiException as e:
        body = {}
        try:
            body = json.loads(e.body or "{}")
        except ValueError:
            pass
        report(step, e.status, reason=body.get("reason"), kind=body.get("kind"), message=body.get("message"), **fields)
        return None


def main():
    spec = json.load(sys.stdin)
    config.load_kube_config(config_file=spec["kubeconfig"])
    core = client.CoreV1Api()
    custom = client.CustomObjectsApi()
    ns, group, version = spec["namespace"], spec["group"], spec["version"]

    def co(method, plural, *args, **kwargs):
        fn = getattr(custom, method + "_with_http_info")
        return lambda: fn(group, version, ns, plural, *args, **kwargs)

    # Create the namespace and one object of each kind; get each back.
    attempt("create namespace", lambda: core.create_namespace_with_http_info({"metadata": {"name": ns}}))
    typed = attempt("read namespace typed", lambda: core.read_namespace_with_http_info(ns))
    if typed is not None:
        report("typed namespace times", 200, created=typed.metadata.creation_timestamp.isoformat())
    for obj in spec["objects"]:
        plural, name = obj["plural"], obj["body"]["metadata"]["name"]
        if obj.get("cluster"):
            create = lambda: custom.create_cluster_custom_object_with_http_info(group, version, plural, obj["body"])
            get = lambda: custom.get_cluster_custom_object_with_http_info(group, version, plural, name)
        else:
            create = co("create_namespaced_custom_object", plural, obj["body"])
            get = co("get_namespaced_custom_object", plural, name)
        attempt("create " + plural, create)
        got = attempt("get " + plural, get)
        if got is not None:
            report("got " + plural, 200, name=got["metadata"]["name"], apiVersion=got["apiVersion"], spec=got.get("spec"))
        if obj.get("cluster"):
            attempt("delete " + plural,
                    lambda: custom.delete_cluster_custom_object_with_http_info(group, version, plural, name))

    # A list read one item at a time: the continue tokens must yield all of it, once each.
    paged = spec["paged"]
    for body in paged["bodies"]:
        attempt("create for paging", co("create_namespaced_custom_object", paged["plural"], body))
    names, pages, token = [], 0, None
    while True:
        kwargs = {"limit": 1}
        if token:
            kwargs["_continue"] = token
        page = attempt("list page", co("list_namespaced_custom_object", paged["plural"], **kwargs))
        if page is None:
            break
        pages += 1
        names += [item["metadata"]["name"] for item in page["items"]]
        token = page["metadata"].get("continue")
        if not token or pages > 100:
            break
    report("list paged", 200, names=names, pages=pages)

    # Patches, each way, on the first paged object.
    plural, name = paged["plural"], paged["bodies"][0]["metadata"]["name"]
    merged = attempt(
        "patch merge",
        co("patch_namespaced_custom_object", plural, name, {"metadata": {"labels": {"merge": "yes"}}},
           _content_type="application/merge-patch+json"),
    )
    report("patched merge", 200, label=(merged or {}).get("metadata", {}).get("labels", {}).get("merge"))
    jsoned = attempt(
        "patch json",
        co("patch_namespaced_custom_object", plural, name,
           [{"op": "add", "path": "/metadata/labels/json", "value": "yes"}],
           _content_type="application/json-patch+json"),
    )
    report("patched json", 200, label=(jsoned or {}).get("metadata", {}).get("labels", {}).get("json"))
    strategic = attempt(
        "patch strategic namespace",
        lambda: core.patch_namespace_with_http_info(ns, {"metadata": {"labels": {"strategic": "yes"}}}),
    )
    report("patched strategic", 200, label=((strategic.metadata.labels or {}).get("strategic") if strategic else None))

    # Server-side apply: a label the manager drops goes, another manager's different value is a
    # conflict, and force takes it.
    def apply(step, manager, labels, **kwargs):
        body = dict(paged["bodies"][0], metadata={"name": name, "labels": labels})
        return attempt(step, co("patch_namespaced_custom_object", plural, name, body, field_manager=manager,
                                _content_type="application/apply-patch+yaml", **kwargs))
    apply("apply owner", "compat-a", {"applied": "a", "dropped": "x"})
    applied = apply("apply dropped", "compat-a", {"applied": "a"})
    report("applied labels", 200, labels=(applied or {}).get("metadata", {}).get("labels"))
    apply("apply conflict", "compat-b", {"applied": "b"})
    forced = apply("apply forced", "compat-b", {"applied": "b"}, force=True)
    report("forced", 200, label=(forced or {}).get("metadata", {}).get("labels", {}).get("applied"))

    # A watch from a version sees the change made after it.
    current = attempt("get for watch", co("get_namespaced_custom_object", plural, name))
    version_before = current["metadata"]["resourceVersion"] if current else "0"
    attempt(
        "patch for watch",
        co("patch_namespaced_custom_object", plural, name, {"metadata": {"labels": {"watched": "yes"}}},
           _content_type="application/merge-patch+json"),
    )
    seen = None
    w = watch.Watch()
    for event in w.stream(
        custom.list_namespaced_custom_object, group, version, ns, plural,
        resource_version=version_before, timeout_seconds=10,
    ):
        obj = event["object"]
        if obj.get("metadata", {}).get("name") == name and obj["metadata"].get("labels", {}).get("watched") == "yes":
            seen = event["type"]
            w.stop()
    report("watch from version", 200, seen=seen)

    # A stale resourceVersion is a 409 Conflict.
    if current is not None:
        stale = dict(current)
        stale["metadata"] = dict(current["metadata"], labels={"stale": "yes"})
        attempt("replace stale", co("replace_namespaced_custom_object", plural, name, stale))

    # A dry run answers and changes nothing.
    dry = paged["dry_run_body"]
    attempt("create dry run", co("create_namespaced_custom_object", plural, dry, dry_run="All"))
    attempt("get after dry run", co("get_namespaced_custom_object", plural, dry["metadata"]["name"]))

    # Bad input: the error a client switches on.
    bad = dict(paged["bodies"][0], metadata={"name": "Not_A_Name"})
    attempt("create invalid", co("create_namespaced_custom_object", plural, bad))
    typo = dict(paged["dry_run_body"], metadata={"name": "typo"}, spec={"volumeNme": "x"})
    attempt("create unknown field strict", co("create_namespaced_custom_object", plural, typo, field_validation="Strict"))
    attempt("create unknown field ignored", co("create_namespaced_custom_object", plural, typo, field_validation="Ignore"))
    pruned = attempt("get unknown field ignored", co("get_namespaced_custom_object", plural, "typo"))
    report("pruned", 200, spec=(pruned or {}).get("spec"))
    attempt("delete unknown field ignored", co("delete_namespaced_custom_object", plural, "typo"))
    attempt("get missing", co("get_namespaced_custom_object", plural, "missing"))
    attempt("list bad selector", co("list_namespaced_custom_object", plural, label_selector="a===b"))

    # Typed times: a condition's lastTransitionTime parses as a datetime.
    cond = spec["conditions"]
    conditions, deadline = [], time.time() + 60
    while not conditions and time.time() < deadline:
        got = attempt("get for conditions", co("get_namespaced_custom_object", cond["plural"], cond["name"]))
        conditions = ((got or {}).get("status") or {}).get("conditions") or []
        if not conditions:
            time.sleep(0.5)
    parsed = []
    for c in conditions:
        parsed.append(client.ApiClient()._ApiClient__deserialize(c, "V1Condition").last_transition_time.isoformat())
    report("typed condition times", 200, parsed=parsed)

    # Deletes with each propagation, then one of a collection by selector.
    for propagation, body in zip(["Background", "Foreground", "Orphan"], paged["bodies"]):
        attempt("delete " + propagation,
                co("delete_namespaced_custom_object", plural, body["metadata"]["name"], propagation_policy=propagation))
    left, deadline = None, time.time() + 60
    while time.time() < deadline:
        listed = attempt("list after deletes", co("list_namespaced_custom_object", plural))
        left = sorted(i["metadata"]["name"] for i in (listed or {}).get("items", []))
        if not any(b["metadata"]["name"] in left for b in paged["bodies"]):
            break
        time.sleep(0.5)
    report("deleted", 200, left=left)
    collection = paged["collection"]
    for body in collection["bodies"]:
        attempt("create for collection", co("create_namespaced_custom_object", plural, body))
    gone = attempt("delete collection",
                   co("delete_collection_namespaced_custom_object", plural, label_selector=collection["selector"]))
    report("deleted collection", 200, names=sorted(i["metadata"]["name"] for i in (gone or {}).get("items", [])))

    attempt("delete namespace", lambda: core.delete_namespace_with_http_info(ns))


if __name__ == "__main__":
    main()
