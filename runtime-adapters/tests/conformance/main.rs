//! The runtime contract, written once and run against the simulated runtime and real Docker.
//!
//! Each case is a separate test per runtime: `sim_conformance::<case>` and
//! `docker_conformance::<case>`. Where they disagree, the simulated runtime is what gets fixed:
//! the simulator is only as good as its model of Docker.
#![allow(clippy::unwrap_used)]

mod cases;
mod fixture;

use drydock_adapters::testing::{TEST_IMAGE, docker_or_skip, ensure_test_image};
use fixture::{DockerRegistry, Fixture, SimAdapter};
use std::sync::Arc;

async fn sim_fixture(case: &str) -> Fixture<SimAdapter> {
    let sim = Arc::new(SimAdapter::new(TEST_IMAGE));
    Fixture::new(sim.clone(), sim, case)
}

async fn docker_fixture(case: &str) -> Option<Fixture<drydock_adapters::DockerRuntime>> {
    let runtime = docker_or_skip(case).await?;
    if let Err(e) = ensure_test_image() {
        panic!("{case}: cannot build the offline test image: {e}");
    }
    Some(Fixture::new(Arc::new(runtime), Arc::new(DockerRegistry), case))
}

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod sim_conformance {
            $(
                #[tokio::test]
                async fn $case() {
                    let fx = super::sim_fixture(stringify!($case)).await;
                    fx.run(super::cases::$case).await;
                }
            )*
        }
        mod docker_conformance {
            $(
                #[tokio::test]
                async fn $case() {
                    if let Some(fx) = super::docker_fixture(stringify!($case)).await {
                        fx.run(super::cases::$case).await;
                    }
                }
            )*
        }
        /// Both runtimes run the same list of cases.
        pub const CASES: &[&str] = &[$(stringify!($case)),*];
    };
}

conformance! {
    create_with_missing_image_is_not_found,
    create_returns_an_id_and_the_container_is_created,
    create_with_a_taken_name_is_conflict,
    conflict_message_names_the_container,
    a_name_is_free_again_after_remove,
    create_with_an_invalid_name_fails,
    create_without_command_uses_the_image_default,
    create_from_an_image_id,
    start_runs_the_container,
    start_twice_is_fine,
    start_missing_is_not_found,
    start_after_remove_is_not_found,
    stop_a_running_container_records_the_kill_exit_code,
    stop_a_stopped_container_is_fine,
    stop_a_created_container_is_fine_and_leaves_it_created,
    stop_missing_is_not_found,
    remove_running_without_force_is_conflict,
    remove_running_with_force,
    remove_stopped_without_force,
    remove_created_without_force,
    remove_missing_is_not_found,
    remove_twice_is_not_found_the_second_time,
    inspect_after_remove_is_not_found,
    inspect_by_name,
    inspect_by_id_prefix,
    inspect_missing_is_not_found,
    inspect_reports_labels_name_and_image,
    a_running_container_has_no_exit_code,
    list_by_one_label,
    list_needs_every_label_to_match,
    list_includes_stopped_and_created_containers,
    list_with_no_match_is_empty,
    list_reports_each_state,
    list_after_remove_leaves_it_out,
    exit_code_of_a_container_that_exits_by_itself,
    exit_code_zero,
    a_container_that_keeps_running,
    start_an_exited_container_again,
    events_for_create_start_die_destroy,
    events_for_a_container_that_exits_by_itself,
    events_for_force_remove_of_a_running_container,
    image_inspect_of_a_present_image,
    image_inspect_of_a_missing_image_is_not_found,
    image_inspect_normalizes_references,
    image_inspect_by_id,
    labels_with_an_owner_uid_find_exactly_that_container,
    ports_are_published_while_running,
    a_bind_mount_is_visible_inside,
    image_pull_then_inspect_gives_the_registry_content_id,
    image_pull_progress_names_the_repository_digest_and_outcome,
    image_pull_again_is_up_to_date,
    image_pull_of_a_missing_tag_or_repository_is_not_found,
    image_pull_of_an_unknown_digest_is_not_found,
    image_pull_by_digest_adds_no_tag,
    image_pull_of_a_moved_tag_gives_a_new_id_and_keeps_the_old_image,
    image_pull_of_the_pushed_test_image_keeps_its_id,
    image_remove_by_tag_while_a_container_uses_it_is_conflict,
    image_remove_while_a_running_container_uses_it_is_conflict_even_with_force,
    image_force_remove_by_tag_while_running_only_untags,
    image_force_remove_with_a_stopped_container_deletes_the_image,
    image_remove_of_an_unused_image_then_inspect_is_not_found,
    image_remove_missing_is_not_found,
    image_remove_one_of_two_tags_only_untags,
    image_remove_by_id_with_two_tags_needs_force,
    image_a_container_pins_the_image_id_not_the_tag,
}

#[test]
fn conformance_suite_has_at_least_40_cases() {
    assert!(CASES.len() >= 40, "{} cases", CASES.len());
}
