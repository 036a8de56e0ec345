//! The runtime contract, written once and run against the simulated runtime and real Docker.
//!
//! Each case is a separate test per runtime: `sim_conformance::<case>` and
//! `docker_conformance::<case>`. Where they disagree, the simulated runtime is what gets fixed:
//! the simulator is only as good as its model of Docker.
//!
//! The cases listed after `docker only:` pin what the Docker daemon itself does where the
//! simulated runtime has nothing to model (its HTTP connections): they run against Docker alone,
//! as `docker_conformance::<case>`.
#![allow(clippy::unwrap_used)]

mod cases;
mod fixture;
mod host;

use drydock_adapters::testing::{TEST_IMAGE, docker_or_skip, ensure_test_image};
use fixture::Fixture;
use host::{DockerHost, SimAdapter};
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
    Some(Fixture::new(Arc::new(runtime), Arc::new(DockerHost), case))
}

macro_rules! conformance {
    ($($case:ident),* $(,)?; docker only: $($docker_case:ident),* $(,)?) => {
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
            $(
                #[tokio::test]
                async fn $docker_case() {
                    if let Some(fx) = super::docker_fixture(stringify!($docker_case)).await {
                        fx.run(super::cases::$docker_case).await;
                    }
                }
            )*
        }
        /// Both runtimes run the same list of cases (and Docker the `docker only` ones too).
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
    events_replay_only_the_last_256,
    events_replay_counts_events_of_every_type,
    image_inspect_of_a_present_image,
    image_inspect_of_a_missing_image_is_not_found,
    image_inspect_normalizes_references,
    image_inspect_by_id,
    image_inspect_by_a_short_id_prefix,
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
    start_of_a_command_not_in_the_image_is_invalid_and_leaves_it_created,
    start_of_a_command_not_in_the_image_fails_every_time,
    a_command_not_in_the_image_emits_only_a_create_event,
    start_of_a_missing_path_is_invalid,
    a_command_missing_inside_a_script_exits_127,
    start_with_a_host_port_another_container_holds_fails_until_it_is_freed,
    start_with_a_host_port_a_host_process_holds_fails_until_it_is_freed,
    a_failed_restart_keeps_the_earlier_exit_code,
    a_good_start_clears_the_error_of_a_failed_one,
    host_port_zero_gets_an_ephemeral_port_reported_in_inspect,
    port_conflicts_depend_on_the_host_address,
    ports_are_not_published_on_the_host_or_none_network,
    create_with_a_relative_mount_source_is_invalid,
    create_with_a_relative_mount_target_is_invalid,
    create_with_two_mounts_on_one_target_is_invalid,
    create_with_a_mount_on_root_is_invalid,
    create_with_a_one_character_name_is_invalid,
    create_with_an_empty_env_name_is_invalid,
    create_with_an_image_reference_outside_the_grammar_is_invalid,
    create_with_an_uppercase_repository_is_invalid,
    create_checks_environment_image_name_then_mounts,
    create_without_a_name_gets_a_generated_one,
    a_script_ends_with_the_status_of_its_last_command,
    test_d_sees_the_containers_directories,
    a_script_whose_sleeps_end_exits_after_them,
    sleep_infinity_runs_until_stopped,
    stop_of_a_script_trapping_term_exits_with_the_trap_status,
    a_term_trap_decides_the_exit_code,
    stop_of_a_script_ignoring_term_kills_it_with_137,
    a_term_trap_waits_for_the_foreground_command,
    stop_waits_for_a_process_that_ends_within_the_grace_period,
    runtime_diff_seed_44_sequence_6,
    runtime_diff_seed_455607_sequence_94,
    runtime_diff_seed_908288_sequence_19,
    a_removal_in_progress_shows_removing_and_refuses_a_second_remove_and_a_start,
    an_ambiguous_id_prefix_is_invalid_not_not_found,
    a_mount_source_without_a_slash_creates_a_volume_that_outlives_the_container,
    a_volume_in_use_cannot_be_removed,
    an_images_volume_is_anonymous_and_removed_with_its_container,
    a_one_character_volume_name_is_invalid,
    a_volume_made_before_a_failing_mount_stays,
    image_pull_from_an_unreachable_registry_is_transient,
    image_pull_of_an_invalid_reference_is_invalid,
    image_inspect_of_an_invalid_reference_is_invalid,
    owner_label_event_stream_delivers_create_start_die_destroy_in_order,
    owner_label_event_stream_leaves_out_unlabelled_containers,
    capture_reads_both_streams_in_order,
    a_line_of_32768_characters_is_captured_whole,
    a_follow_ends_when_the_container_exits,
    a_follow_ends_when_the_container_is_removed,
    a_follow_of_a_created_container_ends_at_once_with_nothing,
    a_capture_of_a_removed_container_is_not_found,
    network_create_inspect_list_by_label_and_remove,
    creates_of_one_network_name_at_once_each_make_a_network,
    network_create_with_a_taken_name_is_conflict,
    network_builtin_create_and_remove_are_invalid,
    network_remove_with_a_running_container_is_conflict,
    network_removed_under_created_and_stopped_containers_fails_their_start,
    create_on_a_missing_network_succeeds_and_its_start_is_not_found,
    create_with_two_networks_attaches_both,
    network_connect_and_disconnect_with_aliases,
    network_aliases_on_the_default_bridge_are_invalid,
    the_host_and_none_networks_exclude_any_other,
    volume_create_is_idempotent_and_keeps_the_first_labels,
    volume_list_by_label_and_missing_volumes,
    volume_remove_while_in_use_is_conflict,
    build_from_a_context_tags_an_image_that_runs_its_command,
    a_failing_build_is_invalid_and_tags_nothing,
    a_build_leaves_out_what_dockerignore_excludes,
    copied_files_are_read_by_the_container,
    a_copy_stops_at_a_file_it_cannot_write,
    a_copy_under_a_volume_mount_lands_in_the_volume,
    a_script_expands_its_environment_and_variables,
    for_loops_and_printf_print_what_busybox_does,
    a_pipeline_feeds_each_command_the_one_before,
    a_pipeline_lasts_as_long_as_its_longest_command,
    files_a_script_writes_stay_with_its_container,
    a_file_written_under_a_volume_mount_is_in_the_volume,
    a_copied_script_runs_by_path_as_its_mode_allows,
    a_built_image_keeps_its_env_and_what_its_run_steps_wrote,
    touch_makes_an_empty_file;
    docker only:
    a_stop_whose_client_hung_up_is_carried_out,
}

#[test]
fn conformance_suite_has_at_least_85_cases() {
    assert!(CASES.len() >= 85, "{} cases", CASES.len());
}
