//! The diesel schema, one for both backends: `diesel print-schema` of the PostgreSQL migrations
//! with `schema.patch` applied (`cargo xtask schema` writes it, and CI fails when it differs). The
//! patch leaves out PostgreSQL's `search_title`/`search_body` tsvector columns (diesel has no
//! tsvector type; the store names them in SQL only, `crates/store/src/search/`) and adds the
//! joins over composite foreign keys, which print-schema does not infer. SQLite's migrations are
//! held to the same tables by the store's contract suite, which runs on both backends.

// @generated automatically by Diesel CLI.

diesel::table! {
    api_keys (id) {
        id -> Text,
        organization_id -> Text,
        name -> Text,
        key_hash -> Text,
        created_by -> Text,
        created_at -> Timestamp,
        expires_at -> Nullable<Timestamp>,
        revoked_at -> Nullable<Timestamp>,
        last_used_at -> Nullable<Timestamp>,
        scopes -> Text,
        parent_id -> Nullable<Text>,
    }
}

diesel::table! {
    attachments (id) {
        id -> Text,
        organization_id -> Text,
        comment_id -> Text,
        name -> Text,
        media_type -> Text,
        size -> Int8,
        description -> Nullable<Text>,
        created_at -> Timestamp,
    }
}

diesel::table! {
    audit_checkpoints (organization_id) {
        organization_id -> Text,
        tree_size -> Int8,
        root_hash -> Text,
        frontier -> Text,
        signed_at -> Timestamp,
        key_id -> Text,
        signature -> Text,
    }
}

diesel::table! {
    audit_entries (id) {
        id -> Text,
        organization_id -> Text,
        seq -> Nullable<Int8>,
        actor_type -> Text,
        actor_id -> Text,
        actor_email -> Nullable<Text>,
        actor_api_key_id -> Nullable<Text>,
        action -> Text,
        resource_type -> Text,
        resource_id -> Text,
        changes -> Text,
        data -> Nullable<Text>,
        request_id -> Nullable<Text>,
        created_at -> Timestamp,
        hash -> Nullable<Text>,
        queued -> Int8,
        sealed_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    audit_tree_heads (organization_id) {
        organization_id -> Text,
        tree_size -> Int8,
        root_hash -> Text,
        frontier -> Text,
        signed_at -> Timestamp,
        key_id -> Text,
        signature -> Text,
    }
}

diesel::table! {
    audit_tree_nodes (organization_id, level, idx) {
        organization_id -> Text,
        level -> Int4,
        idx -> Int8,
        hash -> Text,
    }
}

diesel::table! {
    automation_runs (id) {
        id -> Text,
        organization_id -> Text,
        automation_id -> Text,
        status -> Text,
        trigger_kind -> Text,
        created_at -> Timestamp,
        started_at -> Nullable<Timestamp>,
        completed_at -> Nullable<Timestamp>,
        duration_ms -> Nullable<Int8>,
        screenshot_key -> Nullable<Text>,
        error -> Nullable<Text>,
        verdict_outcome -> Nullable<Text>,
        verdict_reason -> Nullable<Text>,
        steps -> Text,
    }
}

diesel::table! {
    browser_automations (id) {
        id -> Text,
        organization_id -> Text,
        task_id -> Text,
        name -> Text,
        description -> Nullable<Text>,
        target_url -> Text,
        instruction -> Text,
        schedule -> Nullable<Text>,
        is_enabled -> Bool,
        next_run_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        created_by -> Nullable<Text>,
        connection_id -> Nullable<Text>,
        post_result_to_task -> Bool,
        allowed_origins -> Text,
    }
}

diesel::table! {
    check_results (run_id, position) {
        run_id -> Text,
        position -> Int4,
        organization_id -> Text,
        check_id -> Text,
        resource_type -> Text,
        resource_id -> Text,
        resource_name -> Text,
        region -> Nullable<Text>,
        outcome -> Text,
        detail -> Text,
        failure_code -> Nullable<Text>,
        failure_message -> Nullable<Text>,
        failure_action -> Nullable<Text>,
    }
}

diesel::table! {
    check_runs (id) {
        id -> Text,
        organization_id -> Text,
        connection_id -> Text,
        provider -> Text,
        trigger_kind -> Text,
        status -> Text,
        requested_by -> Nullable<Text>,
        period -> Nullable<Int8>,
        queued_at -> Timestamp,
        started_at -> Nullable<Timestamp>,
        finished_at -> Nullable<Timestamp>,
        lease_until -> Nullable<Timestamp>,
        attempts -> Int4,
        error -> Nullable<Text>,
        passed -> Int4,
        failed -> Int4,
        errors -> Int4,
        not_applicable -> Int4,
        population_digest -> Nullable<Text>,
        source -> Text,
    }
}

diesel::table! {
    comments (id) {
        id -> Text,
        organization_id -> Text,
        entity_type -> Text,
        entity_id -> Text,
        author_id -> Text,
        content -> Text,
        context_url -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    connections (id) {
        id -> Text,
        organization_id -> Text,
        provider -> Text,
        status -> Text,
        created_by -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        connected_at -> Nullable<Timestamp>,
        disconnected_at -> Nullable<Timestamp>,
        token_expires_at -> Nullable<Timestamp>,
        last_checked_at -> Nullable<Timestamp>,
        last_error -> Nullable<Text>,
    }
}

diesel::table! {
    context_entries (id) {
        id -> Text,
        organization_id -> Text,
        question -> Text,
        answer -> Text,
        tags -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    control_evidence_sources (control_id, source_id, created_at) {
        organization_id -> Text,
        control_id -> Text,
        kind -> Text,
        source_id -> Text,
        created_at -> Timestamp,
        removed_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    control_requirements (control_id, requirement_id, created_at) {
        organization_id -> Text,
        control_id -> Text,
        requirement_id -> Text,
        framework_id -> Text,
        created_at -> Timestamp,
        removed_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    controls (id) {
        id -> Text,
        organization_id -> Text,
        name -> Text,
        description -> Text,
        owner_id -> Nullable<Text>,
        frequency -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        library_id -> Nullable<Text>,
        library_version -> Nullable<Int4>,
        library_base -> Nullable<Text>,
    }
}

diesel::table! {
    evidence (id) {
        id -> Text,
        organization_id -> Text,
        control_id -> Text,
        kind -> Text,
        source_id -> Nullable<Text>,
        outcome -> Text,
        collected_at -> Timestamp,
        detail -> Text,
        blob_key -> Nullable<Text>,
        run_id -> Nullable<Text>,
    }
}

diesel::table! {
    finding_deadlines (organization_id) {
        organization_id -> Text,
        critical_days -> Int4,
        high_days -> Int4,
        medium_days -> Int4,
        low_days -> Int4,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    findings (id) {
        id -> Text,
        organization_id -> Text,
        connection_id -> Text,
        check_id -> Text,
        resource_type -> Text,
        resource_id -> Text,
        resource_name -> Text,
        region -> Text,
        severity -> Text,
        status -> Text,
        detail -> Text,
        first_seen_at -> Timestamp,
        last_seen_at -> Timestamp,
        resolved_at -> Nullable<Timestamp>,
        due_at -> Timestamp,
        last_run_id -> Text,
        exception_reason -> Nullable<Text>,
        exception_expires_at -> Nullable<Timestamp>,
        exception_by -> Nullable<Text>,
        exception_at -> Nullable<Timestamp>,
        task_id -> Nullable<Text>,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    frameworks (id) {
        id -> Text,
        organization_id -> Text,
        name -> Text,
        version -> Text,
        source -> Text,
        requirement_count -> Int8,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    idempotency_keys (id) {
        id -> Text,
        organization_id -> Text,
        idempotency_key -> Text,
        route -> Text,
        fingerprint -> Text,
        attempt -> Int8,
        locked_until -> Timestamp,
        applied_at -> Nullable<Timestamp>,
        resource_type -> Nullable<Text>,
        resource_id -> Nullable<Text>,
        response_status -> Nullable<Int4>,
        response_content_type -> Nullable<Text>,
        response_location -> Nullable<Text>,
        response_body -> Nullable<Bytea>,
        response_withheld -> Bool,
        created_at -> Timestamp,
        expires_at -> Timestamp,
        response_etag -> Nullable<Text>,
        caller -> Text,
    }
}

diesel::table! {
    invitations (id) {
        id -> Text,
        organization_id -> Text,
        email -> Text,
        role -> Text,
        department -> Text,
        token_hash -> Text,
        invited_by -> Text,
        created_at -> Timestamp,
        expires_at -> Timestamp,
        accepted_at -> Nullable<Timestamp>,
        accepted_by -> Nullable<Text>,
    }
}

diesel::table! {
    list_generations (organization_id, list, shard) {
        organization_id -> Text,
        list -> Text,
        shard -> Int4,
        generation -> Int8,
    }
}

diesel::table! {
    list_row_counts (organization_id, list, shard) {
        organization_id -> Text,
        list -> Text,
        shard -> Int4,
        row_count -> Int8,
    }
}

diesel::table! {
    list_status_counts (organization_id, list, status, assignee_id, shard) {
        organization_id -> Text,
        list -> Text,
        status -> Text,
        assignee_id -> Text,
        shard -> Int4,
        row_count -> Int8,
    }
}

diesel::table! {
    members (id) {
        id -> Text,
        organization_id -> Text,
        user_id -> Text,
        role -> Text,
        department -> Text,
        is_active -> Bool,
        device_manager_label_id -> Nullable<Int8>,
        created_at -> Timestamp,
        last_login -> Nullable<Timestamp>,
    }
}

diesel::table! {
    oauth_states (state_hash) {
        state_hash -> Text,
        organization_id -> Text,
        user_id -> Text,
        provider -> Text,
        redirect_url -> Nullable<Text>,
        created_at -> Timestamp,
        expires_at -> Timestamp,
        pkce_verifier -> Nullable<Bytea>,
    }
}

diesel::table! {
    organization_allowed_hosts (organization_id, used_for, host) {
        organization_id -> Text,
        used_for -> Text,
        host -> Text,
        granted_at -> Timestamp,
    }
}

diesel::table! {
    organizations (id) {
        id -> Text,
        name -> Text,
        slug -> Text,
        logo -> Nullable<Text>,
        metadata -> Nullable<Text>,
        website -> Nullable<Text>,
        onboarding_completed -> Bool,
        has_access -> Bool,
        device_manager_label_id -> Nullable<Int8>,
        is_device_manager_setup_completed -> Bool,
        primary_color -> Nullable<Text>,
        created_at -> Timestamp,
    }
}

diesel::table! {
    policies (id) {
        id -> Text,
        organization_id -> Text,
        name -> Text,
        description -> Text,
        status -> Text,
        content -> Text,
        frequency -> Text,
        department -> Text,
        is_required_to_sign -> Bool,
        signed_by -> Text,
        review_date -> Timestamp,
        is_archived -> Bool,
        last_archived_at -> Nullable<Timestamp>,
        last_published_at -> Nullable<Timestamp>,
        assignee_id -> Nullable<Text>,
        approver_id -> Nullable<Text>,
        policy_template_id -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        current_version -> Int4,
        submitted_by -> Nullable<Text>,
        change_note -> Nullable<Text>,
        rejection_reason -> Nullable<Text>,
        library_id -> Nullable<Text>,
        library_version -> Nullable<Int4>,
        library_base -> Nullable<Text>,
    }
}

diesel::table! {
    policy_signatures (organization_id, policy_id, version, user_id) {
        organization_id -> Text,
        policy_id -> Text,
        version -> Int4,
        user_id -> Text,
        signed_at -> Timestamp,
    }
}

diesel::table! {
    policy_versions (organization_id, policy_id, number) {
        organization_id -> Text,
        policy_id -> Text,
        number -> Int4,
        name -> Text,
        content -> Text,
        change_note -> Nullable<Text>,
        published_at -> Timestamp,
        published_by -> Nullable<Text>,
        approved_by -> Nullable<Text>,
        approved_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    refresh_leases (lease_key) {
        lease_key -> Text,
        holder -> Text,
        expires_at -> Timestamp,
    }
}

diesel::table! {
    requirement_applicability (organization_id, requirement_id, created_at) {
        organization_id -> Text,
        framework_id -> Text,
        requirement_id -> Text,
        applicable -> Bool,
        justification -> Text,
        created_at -> Timestamp,
        removed_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    requirements (id) {
        id -> Text,
        organization_id -> Text,
        framework_id -> Text,
        position -> Int8,
        identifier -> Text,
        title -> Text,
        description -> Nullable<Text>,
        parent_id -> Nullable<Text>,
        catalog_id -> Nullable<Text>,
    }
}

diesel::table! {
    risks (id) {
        id -> Text,
        organization_id -> Text,
        title -> Text,
        description -> Text,
        category -> Text,
        department -> Nullable<Text>,
        status -> Text,
        likelihood -> Text,
        impact -> Text,
        residual_likelihood -> Text,
        residual_impact -> Text,
        treatment_strategy_description -> Nullable<Text>,
        treatment_strategy -> Text,
        assignee_id -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    sessions (id) {
        id -> Text,
        user_id -> Text,
        token_hash -> Text,
        created_at -> Timestamp,
        expires_at -> Timestamp,
    }
}

diesel::table! {
    sign_in_attempts (state_hash) {
        state_hash -> Text,
        nonce -> Text,
        verifier_hash -> Text,
        redirect -> Text,
        created_at -> Timestamp,
        expires_at -> Timestamp,
    }
}

diesel::table! {
    tasks (id) {
        id -> Text,
        organization_id -> Text,
        title -> Text,
        description -> Text,
        status -> Text,
        assignee_id -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        approver_id -> Nullable<Text>,
        frequency -> Nullable<Text>,
        due_at -> Nullable<Timestamp>,
        last_completed_at -> Nullable<Timestamp>,
        rejection_reason -> Nullable<Text>,
        finding_id -> Nullable<Text>,
        library_id -> Nullable<Text>,
        library_version -> Nullable<Int4>,
        library_base -> Nullable<Text>,
    }
}

diesel::table! {
    user_identities (issuer, subject) {
        issuer -> Text,
        subject -> Text,
        user_id -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    users (id) {
        id -> Text,
        name -> Text,
        email -> Text,
        email_verified -> Bool,
        image -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        last_login -> Nullable<Timestamp>,
    }
}

diesel::table! {
    vault_secrets (organization_id, owner_kind, owner_id) {
        organization_id -> Text,
        owner_kind -> Text,
        owner_id -> Text,
        key_id -> Text,
        ciphertext -> Bytea,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    vendors (id) {
        id -> Text,
        organization_id -> Text,
        name -> Text,
        description -> Text,
        category -> Text,
        status -> Text,
        inherent_probability -> Text,
        inherent_impact -> Text,
        residual_probability -> Text,
        residual_impact -> Text,
        website -> Nullable<Text>,
        assignee_id -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Text,
        organization_id -> Text,
        webhook_id -> Text,
        ordinal -> Int8,
        event_type -> Text,
        event_seq -> Nullable<Int8>,
        payload -> Text,
        status -> Text,
        attempts -> Int4,
        next_attempt_at -> Timestamp,
        claimed_until -> Nullable<Timestamp>,
        response_status -> Nullable<Int4>,
        response_body -> Nullable<Text>,
        latency_ms -> Nullable<Int8>,
        last_error -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    webhooks (id) {
        id -> Text,
        organization_id -> Text,
        url -> Text,
        description -> Nullable<Text>,
        events -> Text,
        is_enabled -> Bool,
        disabled_reason -> Nullable<Text>,
        secret -> Bytea,
        previous_secret -> Nullable<Bytea>,
        previous_secret_expires_at -> Nullable<Timestamp>,
        event_cursor -> Int8,
        next_ordinal -> Int8,
        failing_since -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        sealed_url -> Nullable<Bytea>,
    }
}

diesel::joinable!(api_keys -> organizations (organization_id));
diesel::joinable!(api_keys -> users (created_by));
diesel::joinable!(attachments -> comments (comment_id));
diesel::joinable!(attachments -> organizations (organization_id));
diesel::joinable!(automation_runs -> organizations (organization_id));
diesel::joinable!(browser_automations -> organizations (organization_id));
diesel::joinable!(browser_automations -> tasks (task_id));
diesel::joinable!(check_results -> check_runs (run_id));
diesel::joinable!(check_results -> organizations (organization_id));
diesel::joinable!(check_runs -> connections (connection_id));
diesel::joinable!(check_runs -> organizations (organization_id));
diesel::joinable!(comments -> organizations (organization_id));
diesel::joinable!(comments -> users (author_id));
diesel::joinable!(connections -> organizations (organization_id));
diesel::joinable!(connections -> users (created_by));
diesel::joinable!(context_entries -> organizations (organization_id));
diesel::joinable!(controls -> organizations (organization_id));
diesel::joinable!(finding_deadlines -> organizations (organization_id));
diesel::joinable!(findings -> connections (connection_id));
diesel::joinable!(findings -> organizations (organization_id));
diesel::joinable!(frameworks -> organizations (organization_id));
diesel::joinable!(idempotency_keys -> organizations (organization_id));
diesel::joinable!(invitations -> organizations (organization_id));
diesel::joinable!(members -> organizations (organization_id));
diesel::joinable!(members -> users (user_id));
diesel::joinable!(oauth_states -> organizations (organization_id));
diesel::joinable!(oauth_states -> users (user_id));
diesel::joinable!(organization_allowed_hosts -> organizations (organization_id));
diesel::joinable!(policies -> organizations (organization_id));
diesel::joinable!(risks -> organizations (organization_id));
diesel::joinable!(sessions -> users (user_id));
diesel::joinable!(tasks -> organizations (organization_id));
diesel::joinable!(user_identities -> users (user_id));
diesel::joinable!(vault_secrets -> organizations (organization_id));
diesel::joinable!(vendors -> organizations (organization_id));
diesel::joinable!(webhooks -> organizations (organization_id));

diesel::joinable!(control_requirements -> controls (control_id));
diesel::joinable!(control_requirements -> requirements (requirement_id));
diesel::joinable!(webhook_deliveries -> webhooks (webhook_id));

diesel::allow_tables_to_appear_in_same_query!(
    api_keys,
    attachments,
    audit_checkpoints,
    audit_entries,
    audit_tree_heads,
    audit_tree_nodes,
    automation_runs,
    browser_automations,
    check_results,
    check_runs,
    comments,
    connections,
    context_entries,
    control_evidence_sources,
    control_requirements,
    controls,
    evidence,
    finding_deadlines,
    findings,
    frameworks,
    idempotency_keys,
    invitations,
    list_generations,
    list_row_counts,
    list_status_counts,
    members,
    oauth_states,
    organization_allowed_hosts,
    organizations,
    policies,
    policy_signatures,
    policy_versions,
    refresh_leases,
    requirement_applicability,
    requirements,
    risks,
    sessions,
    sign_in_attempts,
    tasks,
    user_identities,
    users,
    vault_secrets,
    vendors,
    webhook_deliveries,
    webhooks,
);
